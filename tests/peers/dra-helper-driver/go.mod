// The module root: build.sh passes -modfile=go.<release>.mod, links to the e2e DRA test
// driver's (the same module graph, built once). Hence the module path.
module devmgr.test/peers/dra-test-driver

go 1.24
