# plugins/: out-of-tree examples, built only against an installed samsa
# (their GNUmakefiles use pkg-config samsa-plugin), never by this build;
# tests/interop/cases/*_test_plugins_install.py installs samsa into a
# temporary prefix and builds and loads the example from there.
EXTRA_DIST += plugins/example/example.c plugins/example/GNUmakefile \
	plugins/template/template.c plugins/template/GNUmakefile plugins/README.md
