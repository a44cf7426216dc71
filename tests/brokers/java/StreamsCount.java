// The broker lab's Kafka Streams application (KIP-1071 "streams" rebalance protocol, group.protocol=streams): a
// stateless topology over one topic, so its group coordinator writes the Streams group records (__consumer_offsets
// types 17 and 19-23) beside its offset commits. Run by the JDK's source launcher on the broker's class path plus
// the kafka-streams jar: java -cp <classpath> StreamsCount.java <bootstrap> <application id> <topic> <want>
// <seconds> <state dir>. It prints "record <offset> <value>" per record and "done <n>" once it has <want> records or
// <seconds> pass, then closes (committing its offsets).
import java.time.Duration;
import java.time.Instant;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;

public class StreamsCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], app = args[1], topic = args[2];
        int want = Integer.parseInt(args[3]);
        Instant deadline = Instant.now().plusSeconds(Long.parseLong(args[4]));
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put("group.protocol", "streams");
        props.put("auto.offset.reset", "earliest");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        AtomicInteger got = new AtomicInteger();
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(topic, Consumed.with(Serdes.String(), Serdes.String())).process(() ->
            new org.apache.kafka.streams.processor.api.Processor<String, String, Void, Void>() {
                private org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> context;
                public void init(org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> c) { context = c; }
                public void process(org.apache.kafka.streams.processor.api.Record<String, String> r) {
                    System.out.println("record " + context.recordMetadata().get().offset() + " " + r.value());
                    got.incrementAndGet();
                }
            });
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            while (got.get() < want && Instant.now().isBefore(deadline)) {
                Thread.sleep(200);
            }
            Thread.sleep(1000);   // one more commit interval: the offsets of what was processed
            streams.close(Duration.ofSeconds(30));
        }
        System.out.println("done " + got.get());
    }
}
