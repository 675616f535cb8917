// The module root for go.<release>.mod (mkmod.sh, build.sh pass -modfile).
module devmgr.test/peers/dra-test-driver

go 1.24
