// What the Kafka lab's consumer programs (RegexConsume, ShareConsume, StreamsCount) share: their argument list
// (<bootstrap> <group> <subject> <want> <seconds> ...), the consumer properties every one of them sets, the loop that
// runs until <want> records or <seconds> pass, and what they print: "record <offset> <value>" per record, "done <n>"
// at the end (the lab reads the "record" lines). Compiled with each program (tests/brokers/java_build.py), so each
// program says only what its client does differently. Nothing here names a Streams class: the consumer programs
// are compiled without the kafka-streams jar.
import java.time.Instant;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

final class KafkaLab {
    private KafkaLab() {
    }

    /** One step of a program's loop: a poll and what follows it, or a wait while another thread consumes. */
    interface Step {
        void run() throws Exception;
    }

    /** The records a program was given, printed and counted (a Streams processor prints from its own thread). */
    static final class Printed {
        private final AtomicInteger count = new AtomicInteger();

        void record(long offset, String value) {
            System.out.println("record " + offset + " " + value);
            count.incrementAndGet();
        }

        int count() {
            return count.get();
        }

        void done() {
            System.out.println("done " + count.get());
        }
    }

    /** The arguments every consumer program starts with: BOOTSTRAP GROUP SUBJECT WANT SECONDS (then its own). */
    record Consume(String bootstrap, String group, String subject, int want, Instant deadline) {
        static Consume parse(String[] args) {
            return new Consume(args[0], args[1], args[2], Integer.parseInt(args[3]),
                               Instant.now().plusSeconds(Long.parseLong(args[4])));
        }

        /** A consumer's connection, group and String deserializers; the program adds its protocol's keys. */
        Properties consumer() {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("group.id", group);
            props.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
            props.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
            return props;
        }

        /** Runs `step` until `printed` holds `want` records or the deadline passes. */
        void until(Printed printed, Step step) throws Exception {
            while (printed.count() < want && Instant.now().isBefore(deadline)) {
                step.run();
            }
        }
    }
}
