core_libsamsacore_a_SOURCES += \
	core/proto/kcodec.c core/proto/kcodec.h \
	core/proto/kerr.c core/proto/kerr.h
include core/proto/gen/gen.mk
