core_libsamsacore_a_SOURCES += \
	core/util/slog.c core/util/slog.h \
	core/util/buf.c core/util/buf.h \
	core/util/arena.c core/util/arena.h \
	core/util/clock.c core/util/clock.h \
	core/util/sfile.c core/util/sfile.h \
	core/util/fdcache.c core/util/fdcache.h \
	core/util/shed.c core/util/shed.h core/util/lru.h \
	core/util/slock.c core/util/slock.h core/util/srwlock.h \
	core/util/hmap.c core/util/hmap.h \
	core/util/uuid.c core/util/uuid.h \
	core/util/rate.c core/util/rate.h \
	core/util/throttle.c core/util/throttle.h \
	core/util/thread.c core/util/thread.h \
	core/util/loopwatch.c core/util/loopwatch.h \
	core/util/chgen.c core/util/chgen.h
