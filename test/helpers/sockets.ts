import net, { type AddressInfo, type Socket } from 'node:net';

/** Bytes a socket has handed on (to the kernel for TCP, to encryption for TLS). */
export const dispatched = (socket: Socket) =>
  (socket as Socket & { _bytesDispatched: number })._bytesDispatched;

/** A connected loopback TCP pair: `server` is the accepted end, `client` the connecting one. */
export async function loopbackPair(): Promise<{ server: Socket; client: Socket; close(): void }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect((listener.address() as AddressInfo).port, '127.0.0.1');
  client.resume();
  const server = await accepted;
  listener.close();
  return {
    server,
    client,
    close() {
      client.destroy();
      server.destroy();
    },
  };
}

/** Resolves with everything `socket` receives until it closes. */
export function receivedUntilClose(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
  });
}
