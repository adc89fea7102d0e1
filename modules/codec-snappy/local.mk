# codec-snappy: Kafka compression codec "snappy" (lib: $(SNAPPY_LIBS)).
if MOD_CODEC_SNAPPY_DYNAMIC
pkglib_LTLIBRARIES += modules/codec-snappy.la
endif
if MOD_CODEC_SNAPPY_STATIC
noinst_LIBRARIES += modules/libcodec-snappy-static.a
STATIC_MODULE_LIBS += modules/libcodec-snappy-static.a $(SNAPPY_LIBS)
endif
modules_codec_snappy_la_SOURCES = modules/codec-snappy/snappy.c
modules_codec_snappy_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_codec_snappy_la_CFLAGS = $(MODULE_CFLAGS) $(SNAPPY_CFLAGS)
modules_codec_snappy_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_codec_snappy_la_LIBADD = $(SNAPPY_LIBS)
modules_libcodec_snappy_static_a_SOURCES = modules/codec-snappy/snappy.c
modules_libcodec_snappy_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libcodec_snappy_static_a_CFLAGS = $(MODULE_CFLAGS) $(SNAPPY_CFLAGS)
