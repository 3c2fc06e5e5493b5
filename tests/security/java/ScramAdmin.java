// Drives the Java Admin client (kafka-clients) against a kraftwire node for tests/security/test_scram_java.py.
// Usage: ScramAdmin <bootstrap> <client.properties> <command> [args...]
//   upsert <user> <SCRAM-SHA-256|SCRAM-SHA-512> <iterations> <password>
//   delete <user> <mechanism>
//   describe                 -> one line per user: <user> <mechanism>:<iterations> ...
//   cluster                  -> the node ids DescribeCluster returns (proves the login worked)
// Errors print "ERROR <exception class> <message>" and exit 1.

import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.Node;

public class ScramAdmin {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[1])) {
            props.load(in);
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        int status = 0;
        try (Admin admin = Admin.create(props)) {
            switch (args[2]) {
                case "upsert": {
                    ScramMechanism mech = ScramMechanism.fromMechanismName(args[4]);
                    List<UserScramCredentialAlteration> alterations = new ArrayList<>();
                    alterations.add(new UserScramCredentialUpsertion(args[3],
                        new ScramCredentialInfo(mech, Integer.parseInt(args[5])), args[6]));
                    admin.alterUserScramCredentials(alterations).all().get(20, TimeUnit.SECONDS);
                    System.out.println("OK");
                    break;
                }
                case "delete": {
                    List<UserScramCredentialAlteration> alterations = new ArrayList<>();
                    alterations.add(new UserScramCredentialDeletion(args[3], ScramMechanism.fromMechanismName(args[4])));
                    admin.alterUserScramCredentials(alterations).all().get(20, TimeUnit.SECONDS);
                    System.out.println("OK");
                    break;
                }
                case "describe": {
                    Map<String, UserScramCredentialsDescription> all =
                        new TreeMap<>(admin.describeUserScramCredentials().all().get(20, TimeUnit.SECONDS));
                    for (UserScramCredentialsDescription d : all.values()) {
                        StringBuilder line = new StringBuilder(d.name());
                        for (ScramCredentialInfo info : d.credentialInfos()) {
                            line.append(' ').append(info.mechanism().mechanismName()).append(':').append(info.iterations());
                        }
                        System.out.println(line);
                    }
                    break;
                }
                case "cluster": {
                    StringBuilder line = new StringBuilder("NODES");
                    for (Node n : admin.describeCluster().nodes().get(20, TimeUnit.SECONDS)) {
                        line.append(' ').append(n.id());
                    }
                    System.out.println(line);
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown command " + args[2]);
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            System.out.println("ERROR " + cause.getClass().getSimpleName() + " " + cause.getMessage());
            status = 1;
        }
        System.exit(status);
    }
}
