// Reads which message a running broker holds at given commit-log offsets, through its admin API (`viewMessage`,
// the call behind `mqadmin queryMsgById`, sent to the broker the offset message id names): one line
// "MSG <offset> <queueId> <queueOffset> <keys>" per offset, "NOMSG <offset> <error>" where it has none.
// Usage: DLedgerKeys NAMESRV BROKER_ADDR TOPIC OFFSET[,OFFSET...]
public class DLedgerKeys {
    public static void main(String[] args) throws Exception {
        var admin = RmqLab.admin(args[0], "keys");
        try {
            String[] hostPort = args[1].split(":");
            byte[] ip = java.net.InetAddress.getByName(hostPort[0]).getAddress();
            for (String text : args[3].split(",")) {
                long offset = Long.parseLong(text);
                var id = java.nio.ByteBuffer.allocate(16).put(ip).putInt(Integer.parseInt(hostPort[1]))
                    .putLong(offset).array();
                StringBuilder hex = new StringBuilder();
                for (byte b : id) hex.append(String.format("%02X", b));
                try {
                    var msg = admin.viewMessage(args[2], hex.toString());
                    System.out.println("MSG " + offset + " " + msg.getQueueId() + " " + msg.getQueueOffset() + " "
                        + msg.getKeys());
                } catch (Exception e) {
                    System.out.println("NOMSG " + offset + " " + e.getClass().getSimpleName());
                }
            }
        } finally {
            admin.shutdown();
        }
    }
}
