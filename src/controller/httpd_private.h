/* The listener settings of httpd.c (per-address connection cap, idle timeout, connection
 * budget, memory per connection, backlog) for the app layer's other endpoints (the webhook). */
#ifndef IMAGEGUARD_HTTPD_PRIVATE_H
#define IMAGEGUARD_HTTPD_PRIVATE_H

#include <microhttpd.h>

struct error;

/* Starts a libmicrohttpd daemon on listen (httpd_parse_listen's syntax) with httpd.c's limits,
 * serving handler(cls) and calling done(done_cls) when a request ends (NULL: none). conn_memory
 * is the per-connection pool (0: httpd.c's). Sets *port to the port bound. Returns the daemon
 * or NULL with err set (IG_EUSAGE bad address, IG_EFAIL cannot bind). */
struct MHD_Daemon *httpd_daemon_start(const char *listen, MHD_AccessHandlerCallback handler,
                                      void *cls, MHD_RequestCompletedCallback done, void *done_cls,
                                      size_t conn_memory, unsigned *port, struct error *err);

#endif
