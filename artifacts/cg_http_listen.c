/*  cg_http_listen — the listening socket of cg_http: "HOST:PORT" parsed and bound. */
#define _GNU_SOURCE
#include "artifacts/cg_http_listen.h"

#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*  Parses "HOST:PORT" (IPv6 hosts in brackets) into *ADDR. Fills *URL_HOST with the host
    for URLs to us (caller owns it). Returns 0, or -1 with *err set to EINVAL. */
static int
s_parse_listen (const char *listen, struct sockaddr_storage *addr, socklen_t *addr_len,
                char **url_host, cg_error_t **err)
{
    const char *host = listen, *host_end, *port_text;
    bool ipv6 = listen[0] == '[';
    if (ipv6) {
        host = listen + 1;
        host_end = strchr (host, ']');
        if (!host_end || host_end[1] != ':')
            return cg_error_set (err, EINVAL, "listen address %s: expected [IPV6]:PORT", listen);
        port_text = host_end + 2;
    }
    else {
        host_end = strrchr (listen, ':');
        if (!host_end)
            return cg_error_set (err, EINVAL, "listen address %s: expected HOST:PORT", listen);
        if (memchr (listen, ':', (size_t)(host_end - listen)))
            return cg_error_set (err, EINVAL, "listen address %s: an IPv6 address goes in brackets",
                                 listen);
        port_text = host_end + 1;
    }
    size_t port_digits = strspn (port_text, "0123456789");
    long port = port_digits >= 1 && port_digits <= 5 ? strtol (port_text, NULL, 10) : -1;
    if (port_text[port_digits] != '\0' || port < 0 || port > 65535)
        return cg_error_set (err, EINVAL, "listen address %s: bad port", listen);
    size_t host_len = (size_t)(host_end - host);
    char host_text[INET6_ADDRSTRLEN];
    if (host_len == 0 || host_len >= sizeof host_text)
        return cg_error_set (err, EINVAL, "listen address %s: bad host", listen);
    memcpy (host_text, host, host_len);
    host_text[host_len] = '\0';

    memset (addr, 0, sizeof *addr);
    char canonical[INET6_ADDRSTRLEN];
    if (ipv6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons ((uint16_t)port);
        if (inet_pton (AF_INET6, host_text, &in6->sin6_addr) != 1)
            return cg_error_set (
                err, EINVAL, "listen address %s: the host is not a numeric IPv6 address", listen);
        *addr_len = sizeof *in6;
        bool any = memcmp (&in6->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0;
        inet_ntop (AF_INET6, any ? &in6addr_loopback : &in6->sin6_addr, canonical,
                   sizeof canonical);
        *url_host = cg_strdupf ("[%s]", canonical);
    }
    else {
        struct sockaddr_in *in4 = (struct sockaddr_in *)addr;
        in4->sin_family = AF_INET;
        in4->sin_port = htons ((uint16_t)port);
        if (inet_pton (AF_INET, host_text, &in4->sin_addr) != 1)
            return cg_error_set (
                err, EINVAL, "listen address %s: the host is not a numeric IPv4 address", listen);
        *addr_len = sizeof *in4;
        struct in_addr loopback = {htonl (INADDR_LOOPBACK)};
        bool any = in4->sin_addr.s_addr == htonl (INADDR_ANY);
        inet_ntop (AF_INET, any ? &loopback : &in4->sin_addr, canonical, sizeof canonical);
        *url_host = cg_xstrdup (canonical);
    }
    return 0;
}

/*  Opens, binds and listens on LISTEN; fills *PORT with the bound port. Returns the
    socket, or -1 with *err set. */
int
cg_http_listen_socket (const char *listen_text, char **url_host, int *port, cg_error_t **err)
{
    struct sockaddr_storage addr;
    socklen_t addr_len = 0;
    if (s_parse_listen (listen_text, &addr, &addr_len, url_host, err) < 0)
        return -1;
    cleanup_close int fd = socket (addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cg_error_set (err, errno, "listen on %s: socket: %s", listen_text, strerror (errno));
    int on = 1;
    if (setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0)
        return cg_error_set (err, errno, "listen on %s: SO_REUSEADDR: %s", listen_text,
                             strerror (errno));
    if (addr.ss_family == AF_INET6
        && setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) < 0)
        return cg_error_set (err, errno, "listen on %s: IPV6_V6ONLY: %s", listen_text,
                             strerror (errno));
    if (bind (fd, (struct sockaddr *)&addr, addr_len) < 0)
        return cg_error_set (err, errno, "listen on %s: bind: %s", listen_text, strerror (errno));
    if (listen (fd, 128) < 0)
        return cg_error_set (err, errno, "listen on %s: listen: %s", listen_text, strerror (errno));
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof bound;
    if (getsockname (fd, (struct sockaddr *)&bound, &bound_len) < 0)
        return cg_error_set (err, errno, "listen on %s: getsockname: %s", listen_text,
                             strerror (errno));
    *port = ntohs (bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                               : ((struct sockaddr_in *)&bound)->sin_port);
    int out = fd;
    fd = -1;
    return out;
}
