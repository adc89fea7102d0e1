core_libsamsacore_a_SOURCES += \
	core/proto/kcodec.c core/proto/kcodec.h \
	core/proto/kerr.c core/proto/kerr.h \
	core/proto/kacl.c core/proto/kacl.h
include core/proto/gen/gen.mk
core_libsamsacore_a_SOURCES += \
	core/proto/crc32c.c core/proto/crc32c.h \
	core/proto/record_batch.c core/proto/record_batch.h
