// What the RocketMQ lab's Java programs share: the producer they send with, the route wait, the "seq-<n>" message,
// the argument list of a send program and the admin client. Compiled with each program (tests/brokers/java_build.py),
// so each program says only what it does differently. `var` keeps the 4.9/5.x package moves out of the source.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.function.ToLongFunction;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class RmqLab {
    private RmqLab() {
    }

    /** The code a program runs while its client is up. */
    interface Body {
        void run() throws Exception;
    }

    /** The arguments a send program starts with: NAMESRV TOPIC BROKER_NAME QUEUES FIRST COUNT BODY_BYTES. */
    record SendArgs(String namesrv, String topic, String brokerName, String[] queues, long first, int count,
                    int bodyBytes) {
        static SendArgs parse(String[] args) {
            return new SendArgs(args[0], args[1], args[2], args[3].split(","), Long.parseLong(args[4]),
                                Integer.parseInt(args[5]), Integer.parseInt(args[6]));
        }

        /** Round-robin over the queues: the queue of sequence number `seq`. */
        int queue(long seq) {
            return Integer.parseInt(queues[(int) ((seq - first) % queues.length)]);
        }

        MessageQueue messageQueue(long seq) {
            return new MessageQueue(topic, brokerName, queue(seq));
        }

        Message message(long seq) {
            return RmqLab.message(topic, seq, bodyBytes);
        }
    }

    /** A producer that sends once per call (no client retries: each result is the broker's answer to one send). */
    static DefaultMQProducer producer(String group, String namesrv, int sendTimeoutMs) {
        var producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("replog-lab-" + System.nanoTime());
        producer.setSendMsgTimeout(sendTimeoutMs);
        producer.setRetryTimesWhenSendFailed(0);
        return producer;
    }

    /** Starts `producer`, waits for the topic's route, runs `body` and shuts the producer down on every way out. */
    static void sending(DefaultMQProducer producer, String topic, Body body) throws Exception {
        producer.start();
        try {
            waitForRoute(producer, topic);
            body.run();
        } finally {
            producer.shutdown();
        }
    }

    /** Body "seq-<seq>-" padded with 'x' to `bodyBytes`, tag "lab", key "k<seq>". */
    static Message message(String topic, long seq, int bodyBytes) {
        StringBuilder body = new StringBuilder("seq-" + seq + "-");
        while (body.length() < bodyBytes) body.append('x');
        var msg = new Message(topic, "lab", body.toString().getBytes(StandardCharsets.UTF_8));
        msg.setKeys("k" + seq);
        return msg;
    }

    /** "SENT <seq> <status> <queueOffset> <queue> <offsetMsgId>". */
    static String sent(long seq, SendResult result, int queue) {
        return "SENT " + seq + " " + result.getSendStatus() + " " + result.getQueueOffset() + " " + queue + " "
            + result.getOffsetMsgId();
    }

    // A topic just created on the broker reaches the name server with the broker's next registration: wait for the
    // route (up to 60 s) instead of failing the first send with "No route info of this topic".
    static void waitForRoute(DefaultMQProducer producer, String topic) throws Exception {
        waitForRoute(() -> !producer.fetchPublishMessageQueues(topic).isEmpty());
    }

    static void waitForRoute(Callable<Boolean> known) throws Exception {
        long deadline = System.currentTimeMillis() + 60000;
        while (true) {
            try {
                if (known.call()) return;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            Thread.sleep(500);
        }
    }

    /** "<label> <topic> <queue> <brokerOffset> <consumerOffset>" per queue of a ConsumeStats offset table, in queue
     * order; the offset getters are passed in because the table's value class moved package between 4.9 and 5.x. */
    static <W> void printOffsets(String label, java.util.Map<MessageQueue, W> table, ToLongFunction<W> brokerOffset,
                                 ToLongFunction<W> consumerOffset) {
        for (var e : new java.util.TreeMap<>(table).entrySet()) {
            var mq = e.getKey();
            System.out.println(label + " " + mq.getTopic() + " " + mq.getQueueId() + " "
                + brokerOffset.applyAsLong(e.getValue()) + " " + consumerOffset.applyAsLong(e.getValue()));
        }
    }

    /** A started admin client (the API behind mqadmin); the caller shuts it down. */
    static DefaultMQAdminExt admin(String namesrv, String name) throws Exception {
        var admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("replog-lab-" + name + "-" + System.nanoTime());
        admin.start();
        return admin;
    }
}
