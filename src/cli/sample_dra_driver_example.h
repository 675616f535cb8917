// The config `devmgr sample-dra-driver` runs when given no --config: the text
// of examples/sample-dra-driver.yaml at build time (sample_dra_driver_example.cc.in).
#ifndef DEVMGR_CLI_SAMPLE_DRA_DRIVER_EXAMPLE_H_
#define DEVMGR_CLI_SAMPLE_DRA_DRIVER_EXAMPLE_H_

namespace devmgr::cli {

// Where the built-in config comes from, as logged and as parse errors name it.
inline constexpr char kSampleDraDriverExamplePath[] = "examples/sample-dra-driver.yaml";
extern const char kSampleDraDriverExampleYaml[];

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_SAMPLE_DRA_DRIVER_EXAMPLE_H_
