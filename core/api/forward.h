/* Admin requests and the metadata quorum, for request handlers:
 *   - waiting for proposals: a handler that got ctl_ops back from the
 *     controller parks the request until they are committed (or lost, or
 *     the request's timeout passes) and then answers;
 *   - forwarding: a broker that is not the active controller sends the
 *     request to the one that is, in an EnvelopeRequest with the
 *     client's principal and address (api/envelope.c), and answers the
 *     client with the inner answer (Kafka's ForwardingManager).
 * Both run on the request's worker, parked (net/park.h) on the
 * operation's key, which the controller notifies when it is done. */
#ifndef SAMSA_API_FORWARD_H
#define SAMSA_API_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct request;
struct ctl_op;

/* Called once, on the worker: errs[i] is 0 when ops[i] committed, its
 * error (NOT_CONTROLLER), or REQUEST_TIMED_OUT. It must answer req. The
 * ops are released afterwards. If the connection dies first, finish is
 * not called. */
typedef void (*api_ops_finish_fn)(struct request *req, void *arg, const int16_t *errs);

/* Parks req until every op (n of them, NULL entries count as done) is
 * done or timeout_ms passed; takes over the op references. With no op
 * pending, finish runs at once. */
void api_wait_ops(struct request *req, struct ctl_op **ops, int n, int64_t timeout_ms, api_ops_finish_fn finish,
                  void *arg);

/* Answers req with error err for everything it asked (each API's own
 * error response). */
typedef void (*api_fail_fn)(struct request *req, int16_t err);

/* Forwards req (its decoded body, encoded again at its version) to the
 * active controller and answers with the controller's answer, or with
 * fail(req, NOT_CONTROLLER / REQUEST_TIMED_OUT). */
void api_forward(struct request *req, int64_t timeout_ms, api_fail_fn fail);

/* Called once, on the worker, with the controller's answer to a
 * forwarded body (resp, len: the response body at req's version, valid
 * during the call) or err (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...; resp
 * NULL). It must answer req. Not called if the connection dies first. */
typedef void (*api_fwd_answer_fn)(struct request *req, void *arg, int16_t err, const uint8_t *resp, size_t len);

/* Forwards body (a request struct of req's API, encoded at req's
 * version: a part of what the client asked, the rest having been
 * answered here, as Kafka's brokers forward what their preprocessing
 * left) and hands the answer to answer. */
void api_forward_body(struct request *req, const void *body, int64_t timeout_ms, api_fwd_answer_fn answer, void *arg);

/* Whether req must be forwarded: this node is not the active controller
 * and req came in on a broker listener. When it came in on a controller
 * listener of a node that is not active, *not_controller is set (answer
 * NOT_CONTROLLER, as Kafka's ControllerApis does). */
bool api_should_forward(struct request *req, bool *not_controller);

#endif
