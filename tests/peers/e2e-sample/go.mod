// The module root for go.<release>.mod (mkmod.sh, build.sh pass -modfile).
module devmgr.test/peers/e2e-sample

go 1.24
