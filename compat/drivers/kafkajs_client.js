// The kafkajs driver of the kraftwire compatibility matrix.
// Usage: node kafkajs_client.js MODE BOOTSTRAP GROUP COUNT TIMEOUT_MS  (NODE_PATH names the kafkajs install)
//   group    - consumer.subscribe(fromBeginning) under GROUP, print COUNT records, commitOffsets(last + 1)
//   describe - admin.describeCluster()
//   version  - the kafkajs version
// kafkajs has no manual assignment: every consumer is a group member.
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const TOPIC = '__cluster_metadata';
const [mode, bootstrap, group, countText, timeoutText] = process.argv.slice(2);
const count = Number(countText || 1);
const timeoutMs = Number(timeoutText || 30000);

function stderrLogger() {
  return ({ namespace, label, log }) => {
    process.stderr.write(`${label} ${namespace} ${log.message}\n`);
  };
}

function kafka() {
  return new Kafka({
    clientId: 'kraftwire-compat',
    brokers: bootstrap.split(','),
    logLevel: logLevel.WARN,
    logCreator: stderrLogger,
    retry: { retries: 5 },
  });
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function consumeGroup() {
  const consumer = kafka().consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 1000 });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  let got = 0;
  let last = -1n;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  const timer = setTimeout(() => finish(false), timeoutMs);
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (got >= count) {
        return;
      }
      emit({ offset: Number(message.offset), value: message.value === null ? null : message.value.toString('hex') });
      last = BigInt(message.offset);
      got += 1;
      if (got >= count) {
        finish(true);
      }
    },
  });
  const ok = await done;
  clearTimeout(timer);
  if (ok) {
    await consumer.commitOffsets([{ topic: TOPIC, partition: 0, offset: (last + 1n).toString() }]);
  }
  await consumer.disconnect();
  if (!ok) {
    process.stderr.write(`read ${got} of ${count} records in ${timeoutMs} ms\n`);
    process.exit(2);
  }
}

async function describe() {
  const admin = kafka().admin();
  await admin.connect();
  try {
    const c = await admin.describeCluster();
    emit({ describe: { cluster_id: c.clusterId, controller_id: c.controller,
                       nodes: c.brokers.map((b) => b.nodeId).sort((a, b) => a - b) } });
  } finally {
    await admin.disconnect();
  }
}

async function main() {
  if (mode === 'version') {
    emit({ version: require('kafkajs/package.json').version });
  } else if (mode === 'group') {
    await consumeGroup();
  } else if (mode === 'describe') {
    await describe();
  } else {
    throw new Error(`unsupported mode ${mode}`);
  }
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
