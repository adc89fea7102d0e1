/* Helpers shared by the deliberately wrong plugin fixtures: a descriptor
 * with the right frozen fields and a trivial init, which each fixture
 * then spoils in one way. */
#ifndef FIXTURE_COMMON_H
#define FIXTURE_COMMON_H

#include <string.h>

#include "samsa/codec.h"
#include "samsa/plugin.h"

__attribute__((unused)) static int fixture_ok_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr,
                           size_t errlen)
{
    (void)host;
    (void)api;
    (void)state;
    (void)errstr;
    (void)errlen;
    return SAMSA_OK;
}

#endif
