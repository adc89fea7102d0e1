/* ApiVersions: what samsa serves, and the client's name (KIP-511). */
#include <stdio.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/features.h"
#include "api/handlers.h"
#include "api/request.h"
#include "net/conn.h"
#include "proto/kerr.h"

/* KIP-511: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
static bool valid_software_field(kstr_t s)
{
    if (s.len <= 0)
        return false;
    for (int32_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        bool inner = c == '-' || c == '.';
        if (!alnum && (!inner || i == 0 || i == s.len - 1))
            return false;
    }
    return true;
}

static void copy_field(char *dst, size_t dstlen, kstr_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, s.p, n);
    dst[n] = 0;
}

void api_handle_api_versions(struct request *req)
{
    const api_versions_request_t *q = req->body;
    api_versions_response_t resp;
    api_versions_response_init(&resp);
    if (req->api_version >= 3) {
        if (!valid_software_field(q->client_software_name) ||
            !valid_software_field(q->client_software_version)) {
            resp.error_code = KERR_INVALID_REQUEST;
            req_respond(req, &resp);
            return;
        }
        copy_field(req->conn->client_software_name, sizeof req->conn->client_software_name,
                   q->client_software_name);
        copy_field(req->conn->client_software_version, sizeof req->conn->client_software_version,
                   q->client_software_version);
    }
    int nt;
    const struct api_handler *t = api_table(req, &nt);
    resp.api_keys.a = api_versions_response_api_version_new_array(&req->arena, nt);
    resp.api_keys.n = nt;
    for (int i = 0; i < nt; i++) {
        resp.api_keys.a[i].api_key = t[i].key;
        resp.api_keys.a[i].min_version = t[i].min_version;
        resp.api_keys.a[i].max_version = t[i].max_version;
    }
    if (req->api_version >= 3)
        api_versions_add_features(req, &resp);
    req_respond(req, &resp);
}
