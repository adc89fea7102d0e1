# Broker and topic configuration (core/config.*, core/topic_config.*).
core_libsamsacore_a_SOURCES += \
	core/config.c core/config.h \
	core/topic_config.c core/topic_config.h

EXTRA_DIST += etc/samsa.conf
