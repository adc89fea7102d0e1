# sasl-scram: SASL mechanisms "SCRAM-SHA-256" and "SCRAM-SHA-512"
# (RFC 5802, RFC 7677) (lib: $(LIBCRYPTO_LIBS)).
if MOD_SASL_SCRAM_DYNAMIC
pkglib_LTLIBRARIES += modules/sasl-scram.la
endif
if MOD_SASL_SCRAM_STATIC
noinst_LIBRARIES += modules/libsasl-scram-static.a
STATIC_MODULE_LIBS += modules/libsasl-scram-static.a $(LIBCRYPTO_LIBS)
endif
modules_sasl_scram_la_SOURCES = modules/sasl-scram/scram.c
modules_sasl_scram_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_sasl_scram_la_CFLAGS = $(MODULE_CFLAGS) $(LIBCRYPTO_CFLAGS)
modules_sasl_scram_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_sasl_scram_la_LIBADD = $(LIBCRYPTO_LIBS)
modules_libsasl_scram_static_a_SOURCES = modules/sasl-scram/scram.c
modules_libsasl_scram_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libsasl_scram_static_a_CFLAGS = $(MODULE_CFLAGS) $(LIBCRYPTO_CFLAGS)
