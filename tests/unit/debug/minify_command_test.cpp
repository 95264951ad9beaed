// `ember minify` and `ember repro` on a saved graph, run as separate processes, and the
// repro.cpp the minifier writes, built with ember/build_info.h and run.
#include "debug_helpers.h"
#include "ember/build_info.h"

namespace ember::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(ReproTest, MinifyAGraphFileThenReproItWithTheCliAndAsAProgram) {
  const fs::path graph = dir / "graph.txt";
  std::ofstream(graph) << to_string(*ten_op_graph()) << "\n";
  // Any graph text: no backend in it, so --backend is required.
  CommandResult no_backend = run_ember("", "minify '" + graph.string() + "'");
  EXPECT_EQ(no_backend.status, 2) << no_backend.output;
  EXPECT_NE(no_backend.output.find("names no backend; pass --backend NAME"), std::string::npos) << no_backend.output;

  CommandResult m =
      run_ember("EMBER_INJECT_RELU_BUG=runtime_error", "minify '" + graph.string() + "' --backend inductor");
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_NE(m.output.find("[minifier] graph fn fails: run error (RuntimeError): inductor: injected runtime error"),
            std::string::npos)
      << m.output;
  EXPECT_NE(m.output.find("ember minify: 1 of 10 ops left after "), std::string::npos) << m.output;
  const fs::path repro = dir / "minified" / "repro.txt";
  ASSERT_TRUE(fs::exists(repro)) << m.output;
  const std::string text = read_file(repro);
  EXPECT_NE(text.find("config: inductor.inject_relu_bug_TESTING_ONLY=runtime_error\n"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::relu("), std::string::npos) << text;

  CommandResult fails = run_ember("", "repro '" + repro.string() + "'");
  EXPECT_EQ(fails.status, 1) << fails.output;
  EXPECT_NE(fails.output.find("FAILS: run error (RuntimeError): inductor: injected runtime error"), std::string::npos)
      << fails.output;
  EXPECT_NE(fails.output.find("the same failure as recorded"), std::string::npos) << fails.output;
  CommandResult eager = run_ember("", "repro '" + repro.string() + "' --backend eager");
  EXPECT_EQ(eager.status, 0) << eager.output;
  EXPECT_NE(eager.output.find("no failure: the graph compiles and runs"), std::string::npos) << eager.output;

  // repro.cpp: a standalone program through the public API that shows the failure too.
  const fs::path cpp = dir / "minified" / "repro.cpp";
  const fs::path exe = dir / "minified" / "repro";
  CommandResult built = run_command(build_info::compile_command(cpp.string(), exe.string()));
  ASSERT_EQ(built.status, 0) << built.output << "\n" << read_file(cpp);
  CommandResult ran = run_command("env OMP_NUM_THREADS=2 '" + exe.string() + "'");
  EXPECT_EQ(ran.status, 1) << ran.output;
  EXPECT_NE(ran.output.find("REPRODUCED: RuntimeError: "), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("injected runtime error"), std::string::npos) << ran.output;
}

TEST_F(ReproTest, MinifyReportsABadFileWithItsLine) {
  const fs::path bad = dir / "bad.txt";
  std::ofstream(bad) << "kind: launcher\nbackend: eager\nbogus line\n";
  CommandResult r = run_ember("", "minify '" + bad.string() + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("ember minify: ValueError: " + bad.string() + ":3: expected 'key: value'"), std::string::npos)
      << r.output;
}

TEST_F(ReproTest, MinifyRejectsAMaxCompilesThatIsNotACount) {
  const fs::path graph = dir / "graph.txt";
  std::ofstream(graph) << to_string(*ten_op_graph()) << "\n";
  // std::stoull used to throw std::invalid_argument: "ember minify: stoull".
  for (const std::string bad : {"ten", "-1", "99999999999999999999", ""}) {
    CommandResult r = run_ember("", "minify '" + graph.string() + "' --backend eager --max-compiles '" + bad + "'");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("ember minify: expected --max-compiles N (a count of compiles, 0 for no limit), got '" +
                            bad + "'"),
              std::string::npos)
        << r.output;
  }
}

}  // namespace
}  // namespace ember::testing
