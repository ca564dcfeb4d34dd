// The floor for any proxy process on this machine: a TCP relay in C that parses nothing. Each
// accepted connection gets its own connection to 127.0.0.1:<port>; bytes are copied both ways
// with one read and one write per chunk (sockets blocking, TCP_NODELAY on both), from one epoll
// loop. It prints the port it listens on. The benchmarks compile it when a C compiler is present.
//
//   cc -O2 -o floor-relay bench/floor-relay.c && ./floor-relay <editor port>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 65536

static int peer[MAX_FDS];

static void loopback(struct sockaddr_in *address, int port) {
  address->sin_family = AF_INET;
  address->sin_port = htons(port);
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void watch(int epoll, int fd) {
  struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };
  epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

static void hang_up(int fd) {
  int other = peer[fd];
  close(fd);
  if (other >= 0) close(other);
  peer[fd] = -1;
  if (other >= 0) peer[other] = -1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <editor port>\n", argv[0]);
    return 2;
  }
  int target = atoi(argv[1]), on = 1;
  struct sockaddr_in address = { 0 };
  socklen_t length = sizeof address;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  loopback(&address, 0);
  if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 128) < 0) {
    perror("listen");
    return 1;
  }
  getsockname(listener, (struct sockaddr *)&address, &length);
  printf("%d\n", ntohs(address.sin_port));
  fflush(stdout);

  int epoll = epoll_create1(0);
  watch(epoll, listener);
  static char buffer[65536];
  struct epoll_event events[64];
  for (;;) {
    int ready = epoll_wait(epoll, events, 64, -1);
    for (int i = 0; i < ready; i++) {
      int fd = events[i].data.fd;
      if (fd == listener) {
        int client = accept(listener, NULL, NULL);
        if (client < 0 || client >= MAX_FDS) continue;
        int editor = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in to = { 0 };
        loopback(&to, target);
        if (editor < 0 || editor >= MAX_FDS || connect(editor, (struct sockaddr *)&to, sizeof to) < 0) {
          close(client);
          if (editor >= 0) close(editor);
          continue;
        }
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        setsockopt(editor, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        peer[client] = editor;
        peer[editor] = client;
        watch(epoll, client);
        watch(epoll, editor);
        continue;
      }
      if (peer[fd] < 0) continue;
      ssize_t got = read(fd, buffer, sizeof buffer);
      if (got <= 0) {
        hang_up(fd);
        continue;
      }
      for (ssize_t sent = 0; sent < got;) {
        ssize_t n = write(peer[fd], buffer + sent, got - sent);
        if (n <= 0) {
          hang_up(fd);
          break;
        }
        sent += n;
      }
    }
  }
}
