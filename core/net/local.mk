core_libsamsacore_a_SOURCES += \
	core/net/net.c core/net/net.h \
	core/net/worker.h core/net/park.c core/net/park.h core/net/offload.c core/net/offload.h \
	core/net/framepool.c core/net/framepool.h \
	core/net/conn.c core/net/conn.h \
	core/net/tls.c core/net/tls.h core/net/tls_rules.c core/net/tls_rules.h \
	core/net/kclient.c core/net/kclient.h \
	core/net/peer_security.c core/net/peer_security.h \
	core/net/sasl_client.c core/net/sasl_client.h \
	core/net/http.c core/net/http_head.c core/net/http.h core/net/netstats.h
