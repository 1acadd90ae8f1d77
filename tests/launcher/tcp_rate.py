"""TCP rates on the test beds (scripts/link_testbed.sh, scripts/fabric_testbed.sh).

  python tcp_rate.py receive PORT [--span]     accepts one connection, prints the Gbit/s
                                               of payload it received at; with --span, a
                                               second line "BYTES FIRST LAST" (wall-clock
                                               seconds of the first and last data), so
                                               flows on several hosts add up over one span
  python tcp_rate.py send HOST PORT SECONDS    sends to HOST:PORT for SECONDS (retrying
                                               the connection while nobody listens)
"""

import socket
import sys
import time


def receive(port, span=False):
    listener = socket.create_server(("", port))
    connection, _ = listener.accept()
    received, start = 0, None
    while True:
        data = connection.recv(1 << 20)
        if not data:
            break
        if start is None:
            start, first = time.perf_counter(), time.time()
        received += len(data)
    print(f"{received * 8 / (time.perf_counter() - start) / 1e9:.3f}")
    if span:
        print(f"{received} {first:.6f} {time.time():.6f}")


def send(host, port, seconds):
    for _ in range(100):
        try:
            connection = socket.create_connection((host, port))
            break
        except ConnectionRefusedError:
            time.sleep(0.1)
    else:
        raise SystemExit(f"nobody listens on {host}:{port}")
    block, end = b"x" * (1 << 20), time.perf_counter() + seconds
    while time.perf_counter() < end:
        connection.sendall(block)
    connection.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["receive"] and len(sys.argv) == 3:
        receive(int(sys.argv[2]))
    elif sys.argv[1:2] == ["receive"] and sys.argv[3:] == ["--span"]:
        receive(int(sys.argv[2]), span=True)
    elif sys.argv[1:2] == ["send"] and len(sys.argv) == 5:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        raise SystemExit(__doc__)
