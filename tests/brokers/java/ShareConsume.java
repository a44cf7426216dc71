// The broker lab's share consumer (KIP-932): Kafka's own Java client from the lab version's jars, run by the JDK's
// source launcher: java -cp <classpath> ShareConsume.java <bootstrap> <group> <topic> <want> <seconds>.
// It sets the group's share.auto.offset.reset to earliest (a group config, Admin.incrementalAlterConfigs), then polls
// until it has <want> records or <seconds> pass, acknowledging each record ACCEPT and committing the
// acknowledgements (commitSync) after every poll; it prints "record <offset> <value>" per record delivered.
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;

public class ShareConsume {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        int want = Integer.parseInt(args[3]);
        Instant deadline = Instant.now().plusSeconds(Long.parseLong(args[4]));
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin client = Admin.create(admin)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp set = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                                  AlterConfigOp.OpType.SET);
            client.incrementalAlterConfigs(Map.of(resource, List.of(set))).all().get();
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        int got = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (got < want && Instant.now().isBefore(deadline)) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("record " + r.offset() + " " + r.value());
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    got++;
                }
                consumer.commitSync();
            }
        }
        System.out.println("done " + got);
    }
}
