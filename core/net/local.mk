core_libsamsacore_a_SOURCES += \
	core/net/net.c core/net/net.h \
	core/net/worker.c core/net/worker.h \
	core/net/conn.c core/net/conn.h \
	core/net/kclient.c core/net/kclient.h
