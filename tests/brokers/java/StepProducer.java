// The broker lab's stepped producer: Kafka's own Java client (from the lab version's jars), run by the JDK's source
// launcher and driven line by line on its standard input, so that a scenario can crash or freeze brokers between a
// transaction's records and its commit, and let the SAME producer (its epoch and sequences in memory) go on after.
//   java -cp <classpath> StepProducer.java <bootstrap> <topic> <transactional.id or "-" for idempotent only>
// Commands: "begin", "send <n> <prefix>" (n records to partition 0, each waited for), "commit", "abort", "quit".
// Each answers one line: "ok <what>" ("ok send <first offset> <last offset>"), or "error <exception class>: <message>"
// (the producer stays usable where the client lets it: an abortable error is followed by an "abort").
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

public class StepProducer {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        props.put("max.in.flight.requests.per.connection", "1");
        props.put("delivery.timeout.ms", "300000");
        props.put("request.timeout.ms", "30000");
        props.put("transaction.timeout.ms", "600000");
        props.put("max.block.ms", "300000");
        if (!args[2].equals("-")) {
            props.put("transactional.id", args[2]);
        }
        props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            if (!args[2].equals("-")) {
                producer.initTransactions();
            }
            System.out.println("ok ready");
            System.out.flush();
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split(" ");
                try {
                    switch (cmd[0]) {
                        case "begin":
                            producer.beginTransaction();
                            System.out.println("ok begin");
                            break;
                        case "send":
                            int n = Integer.parseInt(cmd[1]);
                            long first = -1, last = -1;
                            for (int i = 0; i < n; i++) {
                                RecordMetadata meta = producer.send(
                                        new ProducerRecord<>(args[1], 0, "k" + i, cmd[2] + "-" + i)).get();
                                if (first < 0) first = meta.offset();
                                last = meta.offset();
                            }
                            System.out.println("ok send " + first + " " + last);
                            break;
                        case "commit":
                            producer.commitTransaction();
                            System.out.println("ok commit");
                            break;
                        case "abort":
                            producer.abortTransaction();
                            System.out.println("ok abort");
                            break;
                        case "quit":
                            System.out.println("ok quit");
                            System.out.flush();
                            return;
                        default:
                            System.out.println("error unknown command " + line);
                    }
                } catch (Exception e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    System.out.println("error " + cause.getClass().getName() + ": "
                            + String.valueOf(cause.getMessage()).replace('\n', ' '));
                }
                System.out.flush();
            }
        }
    }
}
