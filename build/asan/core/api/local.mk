core_libsamsacore_a_SOURCES += \
	core/api/request.h \
	core/api/dispatch.c core/api/dispatch.h core/api/handlers.h \
	core/api/apiversions.c
core_libsamsacore_a_SOURCES += \
	core/api/fetch_session.c core/api/fetch_session.h \
	core/api/fetch.c core/api/produce.c core/api/listoffsets.c
