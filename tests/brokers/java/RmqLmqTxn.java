// The broker lab's LMQ and transaction client (RocketMQ 5.x jars, compiled with RmqLab.java). Modes:
//   lmq NAMESRV TOPIC BROKER_NAME COUNT      COUNT messages to queue 0 of TOPIC, message i multi-dispatched
//                                            (INNER_MULTI_DISPATCH) to %LMQ%a, and to %LMQ%a,%LMQ%b when i is even:
//                                            "SENT <i> <status> <queueOffset> <msgId>"
//   txn NAMESRV TOPIC FIRST COUNT            transactional messages FIRST..FIRST+COUNT-1; transaction i commits unless
//                                            i % 3 == 2 (rolls back): "TXN <i> <COMMIT|ROLLBACK> <sendStatus> <msgId>"
//   offset NAMESRV BROKER_ADDR GROUP TOPIC QUEUE OFFSET
//                                            commits a consumer offset (UPDATE_CONSUMER_OFFSET, as a consumer does)
//   view NAMESRV BROKER_ADDR TOPIC:QUEUE[,TOPIC:QUEUE...]
//                                            every consume-queue unit the broker serves (queryConsumeQueue) and the
//                                            message it points at, read back by the broker (viewMessage): "MSG <topic>
//                                            <queue> <index> <phyOffset> <size> <sysFlag> <preparedOffset> <tags> <body>"
//                                            then "PROP <topic> <queue> <index> <key> <value>" for the properties below
// Usage: RmqLmqTxn MODE ARGS...
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class RmqLmqTxn {
    static final String[] SHOWN = {"UNIQ_KEY", "REAL_TOPIC", "REAL_QID", "INNER_MULTI_DISPATCH",
        "INNER_MULTI_QUEUE_OFFSET", "__transactionId__", "TRAN_MSG"};

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "lmq": lmq(args[1], args[2], args[3], Integer.parseInt(args[4])); break;
            case "txn": txn(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4])); break;
            case "offset": offset(args); break;
            case "view": view(args[1], args[2], args[3]); break;
            default: throw new IllegalArgumentException(args[0]);
        }
    }

    static void lmq(String namesrv, String topic, String brokerName, int count) throws Exception {
        var producer = RmqLab.producer("replog-lab-lmq", namesrv, 30000);
        RmqLab.sending(producer, topic, () -> {
            for (int i = 0; i < count; i++) {
                var msg = new Message(topic, "lmq", ("lmq-" + i).getBytes(StandardCharsets.UTF_8));
                MessageAccessor.putProperty(msg, "INNER_MULTI_DISPATCH", i % 2 == 0 ? "%LMQ%a,%LMQ%b" : "%LMQ%a");
                var result = producer.send(msg, new MessageQueue(topic, brokerName, 0));
                System.out.println("SENT " + i + " " + result.getSendStatus() + " " + result.getQueueOffset() + " "
                    + result.getMsgId());
            }
        });
    }

    static void txn(String namesrv, String topic, int first, int count) throws Exception {
        var producer = new TransactionMQProducer("replog-lab-txn");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("replog-lab-" + System.nanoTime());
        producer.setSendMsgTimeout(30000);
        producer.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return decide(msg);
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return decide(msg);
            }
        });
        RmqLab.sending(producer, topic, () -> {
            for (int i = first; i < first + count; i++) {
                var msg = new Message(topic, "txn", ("txn-" + i).getBytes(StandardCharsets.UTF_8));
                msg.setKeys("t" + i);
                var result = producer.sendMessageInTransaction(msg, null);
                System.out.println("TXN " + i + " " + decide(msg) + " " + result.getSendStatus() + " "
                    + result.getMsgId());
            }
        });
    }

    static LocalTransactionState decide(Message msg) {
        int i = Integer.parseInt(msg.getKeys().substring(1));
        return i % 3 == 2 ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.COMMIT_MESSAGE;
    }

    static void offset(String[] args) throws Exception {
        var admin = RmqLab.admin(args[1], "view");
        try {
            var header = new org.apache.rocketmq.remoting.protocol.header.UpdateConsumerOffsetRequestHeader();
            header.setConsumerGroup(args[3]);
            header.setTopic(args[4]);
            header.setQueueId(Integer.parseInt(args[5]));
            header.setCommitOffset(Long.parseLong(args[6]));
            var api = org.apache.rocketmq.client.impl.MQClientManager.getInstance()
                .getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
            api.updateConsumerOffset(args[2], header, 10000);
            System.out.println("OFFSET " + args[3] + " " + args[4] + " " + args[5] + " " + args[6]);
        } finally {
            admin.shutdown();
        }
    }

    static void view(String namesrv, String brokerAddr, String queues) throws Exception {
        var admin = RmqLab.admin(namesrv, "view");
        try {
            for (String spec : queues.split(",")) {
                int at = spec.lastIndexOf(':');
                viewQueue(admin, brokerAddr, spec.substring(0, at), Integer.parseInt(spec.substring(at + 1)));
            }
        } finally {
            admin.shutdown();
        }
    }

    static void viewQueue(DefaultMQAdminExt admin, String brokerAddr, String topic, int queue) throws Exception {
        org.apache.rocketmq.remoting.protocol.body.QueryConsumeQueueResponseBody first;
        try {
            first = admin.queryConsumeQueue(brokerAddr, topic, queue, 0, 1, null);
        } catch (org.apache.rocketmq.client.exception.MQClientException e) {
            first = null;      // "<queue>@<topic> is not exist!"
        }
        if (first == null) {   // the broker creates a consume queue with its first unit
            System.out.println("NOQUEUE " + topic + " " + queue);
            return;
        }
        long index = first.getMinQueueIndex(), max = first.getMaxQueueIndex();
        System.out.println("QUEUE " + topic + " " + queue + " " + index + " " + max);
        String[] hostPort = brokerAddr.split(":");
        var host = new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1]));
        while (index < max) {
            var units = admin.queryConsumeQueue(brokerAddr, topic, queue, index, 100000, null).getQueueData();
            if (units == null || units.isEmpty()) {
                System.out.println("GAP " + index);
                index++;
                continue;
            }
            for (var u : units) {
                MessageExt m = admin.viewMessage(topic, MessageDecoder.createMessageId(host, u.getPhysicOffset()));
                String body = new String(m.getBody(), StandardCharsets.UTF_8).replace('\n', ' ').replace(' ', '_');
                System.out.println("MSG " + topic + " " + queue + " " + index + " " + u.getPhysicOffset() + " "
                    + u.getPhysicSize() + " " + m.getSysFlag() + " " + m.getPreparedTransactionOffset() + " " + m.getTags() + " "
                    + (body.isEmpty() ? "-" : body));
                for (String key : SHOWN) {
                    String v = m.getProperty(key);
                    if (v != null) System.out.println("PROP " + topic + " " + queue + " " + index + " " + key + " " + v);
                }
                index++;
            }
        }
    }
}
