/*  cg_docker_api — requests to the Docker Engine API (Docker's or Podman's compatible
    service) over its unix socket, or plain TCP when explicitly allowed, with libcurl;
    every answer parsed with jansson. */
#ifndef CG_DOCKER_API_H
#define CG_DOCKER_API_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct cg_docker_api_t cg_docker_api_t;

/*  The API version every path is sent under (Docker 20.10+, Podman 4+). */
#define CG_DOCKER_API_VERSION "v1.41"

/*  Connects nothing yet: resolves HOST (unix:///path, or tcp://host:port when ALLOW_TCP;
    NULL: $DOCKER_HOST, else unix:///var/run/docker.sock). Returns NULL with *err set
    (EINVAL) for another scheme, or tcp:// not allowed. HOST is copied. The first call
    initializes libcurl, so it comes before threads use it (cg_backend_new). Calls on one
    SELF may come from several threads at once. */
cg_docker_api_t *cg_docker_api_new (const char *host, bool allow_tcp, cg_error_t **err);

void cg_docker_api_destroy (cg_docker_api_t **self_p);

/*  Returns the host it talks to, as unix:///path or tcp://host:port. Borrowed. */
const char *cg_docker_api_host (cg_docker_api_t *self);

/*  Sends METHOD (GET, POST, DELETE) to PATH (below /v1.41, with its query) with BODY as
    JSON (borrowed; NULL: none). Returns the HTTP status and sets *REPLY to the answer's
    JSON (NULL when empty; caller owns it), or -1 with *err set when the engine cannot be
    reached or answers what is not JSON. REPLY may be NULL. */
int cg_docker_api_call (cg_docker_api_t *self, const char *method, const char *path, json_t *body,
                        json_t **reply, cg_error_t **err);

/*  Sets *err for STATUS with the engine's "message" from REPLY (or the status alone), after
    the context in FORMAT. Returns -1. */
int cg_docker_api_fail (int status, json_t *reply, cg_error_t **err, const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

/*  Opens a raw connection for an attach (the engine then speaks the stream on it): returns
    its socket, or -1 with *err set. The socket belongs to SELF (closed by its destroy);
    one at a time. */
int cg_docker_api_connect (cg_docker_api_t *self, cg_error_t **err);

/*  Percent-encodes TEXT for a query string. Caller owns the result. */
char *cg_docker_api_escape (cg_docker_api_t *self, const char *text);

#endif
