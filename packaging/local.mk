# Packaging. `make deb` builds samsa_<version>_<arch>.deb from this build
# (configure it with --prefix=/usr): the binaries, the modules this build
# includes (configure --with-modules / --enable-MODULE) and nothing else,
# the plugin headers and samsa-plugin.pc.
EXTRA_DIST += packaging/deb/mkdeb.sh

.PHONY: deb
deb: all
	$(SHELL) $(top_srcdir)/packaging/deb/mkdeb.sh "$(abs_top_builddir)" "$(PACKAGE_VERSION)" \
	  "$(SAMSA_BUILD_MODULES)" "$(abs_top_builddir)/samsa_$(PACKAGE_VERSION)_`dpkg --print-architecture`.deb"

# The systemd unit and the config it starts samsa with (etc/): the unit's
# paths are this build's bindir and sysconfdir.
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = etc/samsa.service
samsaconfdir = $(sysconfdir)/samsa
dist_samsaconf_DATA = etc/samsa.conf
EXTRA_DIST += etc/samsa.service.in
CLEANFILES += etc/samsa.service
etc/samsa.service: $(top_srcdir)/etc/samsa.service.in Makefile
	@mkdir -p etc
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' $(top_srcdir)/etc/samsa.service.in > $@
