core_libsamsacore_a_SOURCES += \
	core/auth/acl.c core/auth/acl.h \
	core/auth/authz.c core/auth/authz.h \
	core/auth/sasl.c core/auth/sasl.h
