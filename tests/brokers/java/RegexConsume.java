// A KIP-848 consumer of the broker lab: Kafka's own Java client with group.protocol=consumer, subscribed by a regular
// expression (KIP-848's broker-side regex: the group coordinator resolves it and writes a
// ConsumerGroupRegularExpression record, type 16, beside the group's records 3-8 in __consumer_offsets).
// <classpath> RegexConsume <bootstrap> <group> <regex> <want> <seconds> (compiled with KafkaLab.java): polls until
// <want> records or <seconds> pass, commits synchronously, prints "record <offset> <value>" per record and "done <n>".
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;

public class RegexConsume {
    public static void main(String[] args) throws Exception {
        KafkaLab.Consume run = KafkaLab.Consume.parse(args);
        Properties props = run.consumer();
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        KafkaLab.Printed printed = new KafkaLab.Printed();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(new SubscriptionPattern(run.subject()));
            run.until(printed, () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    printed.record(r.offset(), r.value());
                }
                consumer.commitSync();
            });
        }
        printed.done();
    }
}
