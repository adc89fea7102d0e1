core_libsamsacore_a_SOURCES += \
	core/auth/authz.c core/auth/authz.h
