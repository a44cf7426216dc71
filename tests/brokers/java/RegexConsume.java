// A KIP-848 consumer of the broker lab: Kafka's own Java client with group.protocol=consumer, subscribed by a regular
// expression (KIP-848's broker-side regex: the group coordinator resolves it and writes a
// ConsumerGroupRegularExpression record, type 16, beside the group's records 3-8 in __consumer_offsets).
// java -cp <classpath> RegexConsume.java <bootstrap> <group> <regex> <want> <seconds>: polls until <want> records or
// <seconds> pass, commits synchronously, prints "record <offset> <value>" per record and "done <n>".
import java.time.Duration;
import java.time.Instant;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;

public class RegexConsume {
    public static void main(String[] args) {
        String bootstrap = args[0], group = args[1], regex = args[2];
        int want = Integer.parseInt(args[3]);
        Instant deadline = Instant.now().plusSeconds(Long.parseLong(args[4]));
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        int got = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(new SubscriptionPattern(regex));
            while (got < want && Instant.now().isBefore(deadline)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("record " + r.offset() + " " + r.value());
                    got++;
                }
                consumer.commitSync();
            }
        }
        System.out.println("done " + got);
    }
}
