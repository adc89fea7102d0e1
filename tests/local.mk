# Unit tests (cmocka): each area registers its programs in its own fragment.
UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
UNIT_LIBS = $(CORE_LIBS) $(CMOCKA_LIBS)
include tests/unit/util.mk
include tests/unit/gen.mk
include tests/unit/net.mk
include tests/unit/proto.mk
include tests/unit/config.mk
include tests/unit/log.mk
include tests/unit/replica.mk
include tests/unit/controller.mk
include tests/unit/coord.mk
include tests/unit/raft.mk
include tests/unit/quorum.mk
include tests/unit/samsactl.mk
include tests/unit/plugin.mk
include tests/unit/sasl.mk
include tests/unit/auth.mk
include tests/unit/quota.mk
include tests/unit/api.mk
include tests/unit/lua.mk
include tests/fuzz/fuzz.mk
