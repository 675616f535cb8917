// The config `devmgr sample-plugin` runs when given no --config: the text of
// examples/sample-plugin.yaml at build time (sample_plugin_example.cc.in).
#ifndef DEVMGR_CLI_SAMPLE_PLUGIN_EXAMPLE_H_
#define DEVMGR_CLI_SAMPLE_PLUGIN_EXAMPLE_H_

namespace devmgr::cli {

// Where the built-in config comes from, as logged and as parse errors name it.
inline constexpr char kSamplePluginExamplePath[] = "examples/sample-plugin.yaml";
extern const char kSamplePluginExampleYaml[];

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_SAMPLE_PLUGIN_EXAMPLE_H_
