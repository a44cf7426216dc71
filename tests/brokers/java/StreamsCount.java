// The broker lab's Kafka Streams application (KIP-1071 "streams" rebalance protocol, group.protocol=streams): a
// stateless topology over one topic, so its group coordinator writes the Streams group records (__consumer_offsets
// types 17 and 19-23) beside its offset commits. Compiled with KafkaLab.java on the broker's class path plus the
// kafka-streams jar: <classpath> StreamsCount <bootstrap> <application id> <topic> <want> <seconds> <state dir>.
// It prints "record <offset> <value>" per record and "done <n>" once it has <want> records or <seconds> pass, then
// closes (committing its offsets).
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;

public class StreamsCount {
    public static void main(String[] args) throws Exception {
        KafkaLab.Consume run = KafkaLab.Consume.parse(args);
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, run.bootstrap());
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, run.group());
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put("group.protocol", "streams");
        props.put("auto.offset.reset", "earliest");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        KafkaLab.Printed printed = new KafkaLab.Printed();
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(run.subject(), Consumed.with(Serdes.String(), Serdes.String())).process(() ->
            new org.apache.kafka.streams.processor.api.Processor<String, String, Void, Void>() {
                private org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> context;
                public void init(org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> c) { context = c; }
                public void process(org.apache.kafka.streams.processor.api.Record<String, String> r) {
                    printed.record(context.recordMetadata().get().offset(), r.value());
                }
            });
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            run.until(printed, () -> Thread.sleep(200));
            Thread.sleep(1000);   // one more commit interval: the offsets of what was processed
            streams.close(Duration.ofSeconds(30));
        }
        printed.done();
    }
}
