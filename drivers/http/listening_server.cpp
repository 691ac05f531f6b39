#include "drivers/http/listening_server.h"

#include <sys/socket.h>

namespace tide::drivers {

ListeningServer::ListeningServer() {
  set_socket_options([](socket_t sock) {
    const int yes = 1;
    (void)::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes,
                       sizeof yes);  // best effort: only TIME_WAIT rebinds need it
  });
}

void ListeningServer::setListenBacklog(int backlog) {
  // listen() on a socket that listens already only changes its backlog.
  if (svr_sock_ != INVALID_SOCKET) (void)::listen(svr_sock_, backlog);
}

}  // namespace tide::drivers
