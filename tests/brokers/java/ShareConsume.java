// The broker lab's share consumer (KIP-932): Kafka's own Java client from the lab version's jars, compiled with
// KafkaLab.java: <classpath> ShareConsume <bootstrap> <group> <topic> <want> <seconds>.
// It sets the group's share.auto.offset.reset to earliest (a group config, Admin.incrementalAlterConfigs), then polls
// until it has <want> records or <seconds> pass, acknowledging each record ACCEPT and committing the
// acknowledgements (commitSync) after every poll; it prints "record <offset> <value>" per record delivered.
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;

public class ShareConsume {
    public static void main(String[] args) throws Exception {
        KafkaLab.Consume run = KafkaLab.Consume.parse(args);
        Properties admin = new Properties();
        admin.put("bootstrap.servers", run.bootstrap());
        try (Admin client = Admin.create(admin)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, run.group());
            AlterConfigOp set = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                                  AlterConfigOp.OpType.SET);
            client.incrementalAlterConfigs(Map.of(resource, List.of(set))).all().get();
        }
        Properties props = run.consumer();
        props.put("share.acknowledgement.mode", "explicit");
        KafkaLab.Printed printed = new KafkaLab.Printed();
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(run.subject()));
            run.until(printed, () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    printed.record(r.offset(), r.value());
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                consumer.commitSync();
            });
        }
        printed.done();
    }
}
