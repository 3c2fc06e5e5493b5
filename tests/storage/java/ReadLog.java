// Reads kraftwire's segment, index and snapshot files with Kafka's own record classes (kafka-clients),
// the way kafka-dump-log does, and prints one line per batch for the Python test to compare.

import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;

import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.ControlRecordUtils;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;

public class ReadLog {
    public static void main(String[] args) throws IOException {
        for (String name : args) {
            File file = new File(name);
            if (name.endsWith(".index")) {
                checkIndex(file);
                continue;
            }
            try (FileRecords records = FileRecords.open(file, false)) {
                for (FileChannelRecordBatch batch : records.batches()) {
                    batch.ensureValid();
                    StringBuilder line = new StringBuilder();
                    line.append("batch ").append(file.getName()).append(' ').append(batch.baseOffset())
                        .append(' ').append(batch.lastOffset()).append(' ').append(batch.partitionLeaderEpoch())
                        .append(' ').append(batch.isControlBatch()).append(' ').append(batch.countOrNull());
                    if (batch.isControlBatch()) {
                        for (Record record : batch) {
                            ControlRecordType type = ControlRecordType.parse(record.key());
                            line.append(' ').append(type);
                            if (type == ControlRecordType.SNAPSHOT_HEADER) {
                                line.append(":").append(ControlRecordUtils.deserializeSnapshotHeaderRecord(record)
                                    .lastContainedLogTimestamp());
                            } else if (type == ControlRecordType.LEADER_CHANGE) {
                                line.append(":").append(ControlRecordUtils.deserializeLeaderChangeMessage(record)
                                    .leaderId());
                            } else if (type == ControlRecordType.SNAPSHOT_FOOTER) {
                                line.append(":").append(ControlRecordUtils.deserializeSnapshotFooterRecord(record)
                                    .version());
                            }
                        }
                    }
                    System.out.println(line);
                }
            }
        }
    }

    // kafka-dump-log's index check: the batch at each entry's position ends at the entry's offset.
    private static void checkIndex(File index) throws IOException {
        String base = index.getName().substring(0, 20);
        File log = new File(index.getParentFile(), base + ".log");
        long baseOffset = Long.parseLong(base);
        int entries = 0;
        try (DataInputStream in = new DataInputStream(new FileInputStream(index));
             FileRecords records = FileRecords.open(log, false)) {
            while (in.available() >= 8) {
                int relative = in.readInt();
                int position = in.readInt();
                FileChannelRecordBatch batch = records.slice(position, records.sizeInBytes() - position)
                    .batches().iterator().next();
                if (batch.lastOffset() != baseOffset + relative) {
                    System.out.println("mismatch " + index.getName() + " " + relative + " " + position);
                }
                entries++;
            }
        }
        System.out.println("index " + index.getName() + " " + entries);
    }
}
