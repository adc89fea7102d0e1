# sasl-oauthbearer: SASL mechanism "OAUTHBEARER" (RFC 7628): Kafka's
# unsecured JWS validator, or signed JWTs against a JWKS fetched from a file
# or over HTTPS (lib: $(OPENSSL_LIBS)).
if MOD_SASL_OAUTHBEARER_DYNAMIC
pkglib_LTLIBRARIES += modules/sasl-oauthbearer.la
endif
if MOD_SASL_OAUTHBEARER_STATIC
noinst_LIBRARIES += modules/libsasl-oauthbearer-static.a
STATIC_MODULE_LIBS += modules/libsasl-oauthbearer-static.a $(OPENSSL_LIBS)
endif
modules_sasl_oauthbearer_la_SOURCES = modules/sasl-oauthbearer/oauthbearer.c
modules_sasl_oauthbearer_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_sasl_oauthbearer_la_CFLAGS = $(MODULE_CFLAGS) $(OPENSSL_CFLAGS)
modules_sasl_oauthbearer_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_sasl_oauthbearer_la_LIBADD = $(OPENSSL_LIBS)
modules_libsasl_oauthbearer_static_a_SOURCES = modules/sasl-oauthbearer/oauthbearer.c
modules_libsasl_oauthbearer_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libsasl_oauthbearer_static_a_CFLAGS = $(MODULE_CFLAGS) $(OPENSSL_CFLAGS)
