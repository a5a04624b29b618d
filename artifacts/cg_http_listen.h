/*  cg_http_listen — the listening socket of cg_http: "HOST:PORT" parsed and bound. */
#ifndef CG_HTTP_LISTEN_H
#define CG_HTTP_LISTEN_H

#include "base/cg_error.h"

/*  Opens, binds and listens on LISTEN ("HOST:PORT", see cg_http_new: a numeric IPv4
    address, or a numeric IPv6 one in brackets, bound IPv6-only; no name resolved), fills
    *PORT with the bound port and *URL_HOST with the host for URLs to it (the loopback
    address of its family for a wildcard; caller owns it). Returns the non-blocking
    socket, or -1 with *err set: EINVAL for a malformed LISTEN, else the errno of socket,
    setsockopt, bind or listen. */
int cg_http_listen_socket (const char *listen, char **url_host, int *port, cg_error_t **err);

#endif
