// The broker lab's transactional producer: Kafka's own Java client (from the lab version's jars), run by the JDK's
// source launcher: java -cp <classpath> TxnProducer.java <bootstrap> <topic> <transactional.id> <transactions> <records>
// [<aborted>]. Each transaction sends <records> records to partition 0 and commits, but transaction number <aborted>
// (from 0) aborts; the client negotiates the transaction
// version the cluster has (transactions v2 on a 4.x cluster formatted with it: KIP-890).
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class TxnProducer {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("transactional.id", args[2]);
        props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        int transactions = Integer.parseInt(args[3]);
        int records = Integer.parseInt(args[4]);
        int aborted = args.length > 5 ? Integer.parseInt(args[5]) : -1;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int t = 0; t < transactions; t++) {
                producer.beginTransaction();
                for (int i = 0; i < records; i++) {
                    producer.send(new ProducerRecord<>(args[1], 0, "k" + i, "txn-" + t + "-" + i)).get();
                }
                if (t == aborted) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        System.out.println("done " + transactions);
    }
}
