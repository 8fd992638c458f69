// The figures: text from definitions and results never reaches a shell or gnuplot's evaluation,
// a failing gnuplot leaves nothing behind, and each arm keeps its colour and label.
#include "experiments_support.h"

#include <sys/wait.h>

using namespace stiefel_experiments_test;

namespace {

// Texts that a shell, or gnuplot inside a double-quoted string, would evaluate: each would make a
// file MARKER-k if it ran.
std::vector<std::string> hostile_texts(const fs::path& marker) {
  const std::string m = marker.string();
  return {"`touch " + m + "-1`",
          "x\" . system(\"touch " + m + "-2\") . \"",
          "'; system('touch " + m + "-3'); print '",
          "$(touch " + m + "-4) ; touch " + m + "-5",
          "@macro and @@ and \\`touch " + m + "-6\\`",
          "two\nlines `touch " + m + "-7`",
          "back\\slash \\n \"quotes\" 'single' \\",
          std::string("tab\tcr\rnul") + std::string(1, '\0') + "end"};
}

// What gnuplot shows for TEXT: control characters other than tab and line break as U+FFFD.
std::string shown(const std::string& text) {
  std::string s;
  for (const char c : text)
    s += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? std::string("\xEF\xBF\xBD")
                                                                          : std::string(1, c);
  return s;
}

bool have_gnuplot() { return std::system("gnuplot --version > /dev/null 2>&1") == 0; }

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A table whose title, labels and group labels are the hostile texts, with completed runs, so that
// every kind of figure has series to draw.
json hostile_table(const fs::path& marker, const fs::path& dir) {
  const auto texts = hostile_texts(marker);
  json d = selection_definition();
  d["title"] = texts[0] + texts[5];
  d["plots"] = {"accuracy", "paired", "isometry", "eps"};
  for (std::size_t i = 0; i < d["arms"].size(); ++i) {
    d["arms"][i]["label"] = texts[1 + i];
    d["arms"][i]["x"] = 1e-8 * std::pow(100.0, double(i));
  }
  d["groups"] = {{{"id", "main"}, {"label", texts[6] + texts[7]}}};
  const auto ex = resolve(d, "paper", "t.json");
  json grid = json::array();
  for (const auto& r : ex.runs) grid.push_back({{"id", r.id}, {"train", r.train}});
  fs::create_directories(dir);
  std::ofstream(dir / "experiment.json")
      << json({{"definition", d}, {"profile", "paper"}, {"grid", grid}, {"source", texts[3]}}).dump(2);
  for (const auto& r : ex.runs) {
    fs::create_directories(dir / "runs" / r.id);
    std::ofstream(dir / "runs" / r.id / "run.json")
        << run_of_cell(image_run(5, 0.3 + 0.01 * double(r.seed), 0.4), r).dump(2);
  }
  return analyse_results(dir.string(), 200, 0, "");
}

// TMPDIR set to DIR for one scope.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const std::string& n, const std::string& value) : name(n), had(std::getenv(n.c_str()) != nullptr) {
    if (had) old = std::getenv(n.c_str());
    ::setenv(n.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { had ? (void)::setenv(name.c_str(), old.c_str(), 1) : (void)::unsetenv(name.c_str()); }
};

}  // namespace

TEST(Plots, GnuplotShowsEveryHostileTextAsItIsAndRunsNothing) {
  if (!have_gnuplot()) GTEST_SKIP() << "no gnuplot";
  ResultsFolder t("print");
  const auto texts = hostile_texts(t.dir / "ran");
  std::string script = "macro = 'EXPANDED'\nset print " + gnuplot_string((t.dir / "printed.txt").string()) + "\n";
  std::string expected;
  for (const auto& s : texts) {
    script += "print " + gnuplot_string(s) + "\n";
    expected += shown(s) + "\n";
  }
  std::ofstream(t.dir / "print.gp") << script;
  ASSERT_EQ(std::system(("gnuplot '" + (t.dir / "print.gp").string() + "' 2>/dev/null").c_str()), 0) << script;
  std::ifstream in(t.dir / "printed.txt", std::ios::binary);
  const std::string printed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(printed, expected);
  EXPECT_EQ(entries(t.dir), (std::vector<std::string>{(t.dir / "print.gp").string(), (t.dir / "printed.txt").string()}))
      << "gnuplot ran a command";
}

TEST(Plots, HostileTitlesLabelsAndOutputFolderRunNothingAndWriteOnlyTheFigures) {
  if (!have_gnuplot()) GTEST_SKIP() << "no gnuplot";
  ResultsFolder t("hostile");
  const fs::path marker = t.dir / "ran";
  const auto table = hostile_table(marker, t.dir / "results");
  // The scratch folder's old predictable name, planted as a link to a folder it must never write.
  fs::create_directories(t.dir / "tmp");
  fs::create_directories(t.dir / "victim");
  fs::create_directory_symlink(t.dir / "victim", t.dir / "tmp" / ("stiefel-plot-" + std::to_string(::getpid())));
  const ScopedEnv tmpdir("TMPDIR", (t.dir / "tmp").string());
  const fs::path out =
      t.dir / ("report `touch " + marker.string() + "-out` $(touch " + marker.string() + "-out2) \" '");
  const auto files = draw_plots(table, out.string(), "hostile-paper");
  EXPECT_EQ(files.size(), 4u);
  for (const auto& f : files) EXPECT_EQ(fs::path(f).parent_path(), out) << f;
  for (int k = 1; k <= 7; ++k) EXPECT_FALSE(fs::exists(marker.string() + "-" + std::to_string(k))) << k;
  EXPECT_FALSE(fs::exists(marker.string() + "-out"));
  EXPECT_FALSE(fs::exists(marker.string() + "-out2"));
  EXPECT_TRUE(fs::is_empty(t.dir / "victim")) << "written through the planted link";
  // Nothing left in TMPDIR but the planted link: the scratch folder is gone.
  EXPECT_EQ(entries(t.dir / "tmp"),
            (std::vector<std::string>{(t.dir / "tmp" / ("stiefel-plot-" + std::to_string(::getpid()))).string()}));
  // The figures and nothing else were written under the output folder.
  std::vector<std::string> expected = files;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(out), expected);
}

TEST(Plots, AFailingGnuplotLeavesNoScratchFolderAndNoFigure) {
  ResultsFolder t("failing");
  fs::create_directories(t.dir / "bin");
  fs::create_directories(t.dir / "tmp");
  std::ofstream(t.dir / "bin" / "gnuplot") << "#!/bin/sh\necho 'cannot draw this' >&2\nexit 1\n";
  fs::permissions(t.dir / "bin" / "gnuplot", fs::perms::owner_all);
  const auto table = hostile_table(t.dir / "ran", t.dir / "results");
  const ScopedEnv path("PATH", (t.dir / "bin").string());
  const ScopedEnv tmpdir("TMPDIR", (t.dir / "tmp").string());
  try {
    draw_plots(table, (t.dir / "out").string(), "hostile-paper");
    ADD_FAILURE() << "a failing gnuplot was not reported";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("gnuplot failed (exit 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot draw this"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(t.dir / "tmp"));
  EXPECT_TRUE(!fs::exists(t.dir / "out") || fs::is_empty(t.dir / "out"));
}

// A report killed while drawing (SIGKILL: no destructor runs) leaves its scratch folder; the next
// report removes it, and leaves alone a folder of a process that is alive, or that is not a folder.
TEST(Plots, AKilledReportsScratchFolderIsRemovedByTheNext) {
  ResultsFolder t("abandoned");
  fs::create_directories(t.dir / "tmp");
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a process that no longer exists
  const auto dead = t.dir / "tmp" / ("stiefel-plot-" + std::to_string(child) + "-Ab12Cd");
  const auto alive = t.dir / "tmp" / ("stiefel-plot-" + std::to_string(getppid()) + "-Ef34Gh");
  fs::create_directories(dead);
  std::ofstream(dead / "figure.gp") << "plot x";
  fs::create_directories(alive);
  std::ofstream(t.dir / "tmp" / ("stiefel-plot-" + std::to_string(child) + "-file")) << "a file";
  fs::create_directories(t.dir / "bin");
  std::ofstream(t.dir / "bin" / "gnuplot") << "#!/bin/sh\nexit 1\n";
  fs::permissions(t.dir / "bin" / "gnuplot", fs::perms::owner_all);
  const ScopedEnv path("PATH", (t.dir / "bin").string());
  const ScopedEnv tmpdir("TMPDIR", (t.dir / "tmp").string());
  EXPECT_THROW(draw_plots(hostile_table(t.dir / "ran", t.dir / "results"), (t.dir / "out").string(), "x-paper"),
               ExperimentError);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(t.dir / "tmp" / ("stiefel-plot-" + std::to_string(child) + "-file")));
}

// A table that lacks a field, or whose curve columns differ in length, is an error (out_of_range)
// for every kind of figure: nothing reads past a column or behind a missing key (which, with const
// operator[], reads freed or foreign memory and fails, if at all, with some other error).
TEST(Plots, ATableWithAMissingFieldOrAShortColumnIsAnError) {
  const json curve = {{"epoch", {1, 2, 3}},
                      {"train_acc", {0.1, 0.2, 0.3}},
                      {"test_acc", {0.1, 0.2, 0.3}},
                      {"test_acc_min", {0.1, 0.2, 0.3}},
                      {"test_acc_max", {0.1, 0.2, 0.3}},
                      {"isometry_error_max", {1e-3, 1e-3, 1e-3}}};
  const json arm = {{"id", "b2"}, {"curve", curve}, {"n", 2}};
  const json table = {{"title", "t"},
                      {"profile", "p"},
                      {"groups", {{{"id", "g"}, {"label", "g"}, {"arms", {arm}}, {"contrasts", json::array()}}}}};
  for (const std::string kind : {"isometry", "grok", "accuracy"})
    EXPECT_FALSE(figure_script(table, kind).script.empty()) << kind;  // the well-formed table draws

  std::vector<std::pair<std::string, json>> broken;
  for (const char* column : {"train_acc", "test_acc", "test_acc_min", "test_acc_max", "isometry_error_max"}) {
    auto t = table;
    t["groups"][0]["arms"][0]["curve"][column] = {0.1};
    broken.emplace_back(std::string("short ") + column, t);
  }
  auto t = table;
  t["groups"][0]["arms"][0].erase("id");
  broken.emplace_back("arm without id", t);
  t = table;
  t.erase("profile");
  broken.emplace_back("table without profile", t);
  for (const auto& [what, bad] : broken) {
    int refused = 0;
    for (const std::string kind : {"isometry", "accuracy"}) {
      try {
        figure_script(bad, kind);
      } catch (const json::out_of_range&) {
        ++refused;
      }
    }
    EXPECT_GE(refused, 1) << what;
  }
  t = table;
  t["groups"][0]["arms"][0]["curve"].erase("isometry_error_max");
  EXPECT_THROW(figure_script(t, "isometry"), json::out_of_range);
  t = table;
  t["groups"][0]["arms"][0]["vs_baseline"] = {{"differences", {{{"diff", 1.0}}}}, {"diff_mean", 1.0}};
  EXPECT_FALSE(figure_script(t, "paired").script.empty());
  t["groups"][0]["arms"][0]["vs_baseline"].erase("diff_mean");
  EXPECT_THROW(figure_script(t, "paired"), json::out_of_range);
  // A sweep's x on its logarithmic axis must be > 0: refused by name, not as a gnuplot failure (N11).
  t = table;
  t["groups"][0]["x"] = 1000;
  t["groups"][0]["arms"][0]["vs_baseline"] = {{"diff_mean", 1.0}, {"ci_low", 0.5}, {"ci_high", 1.5}};
  EXPECT_FALSE(figure_script(t, "gap_vs_n").script.empty());
  t["groups"][0]["x"] = 0;
  try {
    figure_script(t, "gap_vs_n");
    ADD_FAILURE() << "gap_vs_n drew x = 0 on a logarithmic axis";
  } catch (const ExperimentError& e) {
    EXPECT_NE(std::string(e.what()).find("group g has x = 0 on a logarithmic axis"), std::string::npos) << e.what();
  }
  t = table;
  t["groups"][0]["arms"][0]["x"] = -1e-8;
  EXPECT_THROW(figure_script(t, "eps"), ExperimentError);
}

// Each arm has one colour and one label in every figure, from the arm registry; the legend sits
// below the plot on a canvas that grows with it; every title states the AdamW rate.
TEST(Plots, AnArmKeepsItsRegistryColourAndLabelAndTheLegendNeverSqueezesThePlot) {
  std::set<std::string> colours;
  for (const auto& arm : stiefel::arms::all()) {
    EXPECT_TRUE(std::regex_match(arm.colour, std::regex("#[0-9a-f]{6}"))) << arm.name << " " << arm.colour;
    EXPECT_TRUE(colours.insert(arm.colour).second) << arm.name << ": colour shared with another arm";
  }
  const json curve = {{"epoch", {1, 2}},
                      {"train_acc", {0.1, 0.2}},
                      {"test_acc", {0.1, 0.2}},
                      {"test_acc_min", {0.1, 0.2}},
                      {"test_acc_max", {0.1, 0.2}},
                      {"isometry_error_max", {1e-3, 1e-3}}};
  auto entry = [&](const std::string& id, const std::string& train_arm, const std::string& label) {
    return json{{"id", id}, {"train_arm", train_arm}, {"label", label}, {"curve", curve}, {"n", 3}};
  };
  json table = {{"title", "t"},
                {"profile", "p"},
                {"adam_lr", 0.01},
                {"groups",
                 {{{"id", "g"},
                   {"label", "g"},
                   {"arms",
                    {entry("base", "a2", "A2 (AdamW + Xavier)"), entry("eps-small", "b2", "B2 at eps = 1e-8"),
                     entry("eps-large", "b2", "B2 at eps = 1e-1 (B2)")}},
                   {"contrasts", json::array()}}}}};
  const auto b2 = stiefel::arms::find("b2"), a2 = stiefel::arms::find("a2");
  for (const std::string kind : {"isometry", "accuracy", "grok"}) {
    const auto script = figure_script(table, kind).script;
    SCOPED_TRACE(kind);
    EXPECT_NE(script.find("AdamW rate 0.01"), std::string::npos);
    EXPECT_NE(script.find("set key outside below"), std::string::npos);
    // A2 appears once: its registry label alone, in its colour. B2 twice: the registry label with
    // each entry's own (its closing "(B2)" dropped), the registry colour and then a shade of it.
    EXPECT_NE(script.find("lc rgb '" + a2.colour + "' title 'A2"), std::string::npos) << script;
    EXPECT_EQ(script.find("A2 (AdamW"), std::string::npos);
    EXPECT_NE(script.find("lc rgb '" + b2.colour + "' title 'B2 — B2 at eps = 1e-8"), std::string::npos);
    std::smatch second;
    ASSERT_TRUE(std::regex_search(script, second, std::regex("lc rgb '(#[0-9a-f]{6})' title 'B2 — B2 at eps = 1e-1")))
        << script;
    EXPECT_NE(second[1].str(), b2.colour);
    EXPECT_EQ(script.find("1e-1 (B2)"), std::string::npos);
  }
  // The canvas grows by a row of the legend for every two more series.
  auto height = [](const std::string& script) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(script, m, std::regex("size 1000,([0-9]+)")));
    return std::stoi(m[1]);
  };
  const int three = height(figure_script(table, "isometry").script);
  auto five = table;
  five["groups"][0]["arms"].push_back(entry("pa16", "b2-sgd", "PA16"));
  five["groups"][0]["arms"].push_back(entry("frozen", "frozen", "Frozen"));
  EXPECT_EQ(height(figure_script(five, "isometry").script), three + 18);
}

// A grokking table whose arms have several seeds is drawn as small multiples: the means, one panel a
// seed (the seeds of every arm, each arm's curve in the panel of its seed) with the sustained-grok
// epoch as a line in the arm's colour and in the title, and the legend in a cell of its own.
namespace {

// A seed's held-out curve whose first value names it: ARM_DIGIT/10 + SEED/100 (A2 1, B2 2).
json seed_curve(int arm_digit, int seed, json sustained) {
  return json{{"seed", seed},
              {"epoch", {100, 200, 300}},
              {"test_acc", {0.1 * arm_digit + 0.01 * seed, 0.9, 0.95}},
              {"sustained", sustained}};
}

// The seed curves as vectors: a braced list of one json is an array under gcc and the element itself
// under clang.
json grok_table(const std::vector<json>& a2_seeds, const std::vector<json>& b2_seeds) {
  const json curve = {{"epoch", {100, 200, 300}},         {"train_acc", {0.5, 1.0, 1.0}},
                      {"test_acc", {0.1, 0.5, 0.9}},      {"test_acc_min", {0.1, 0.1, 0.8}},
                      {"test_acc_max", {0.1, 0.9, 0.95}}, {"isometry_error_max", {1e-7, 1e-7, 1e-7}}};
  json a2 = {{"id", "a2"}, {"curve", curve}, {"n", 2}, {"seed_curves", json(a2_seeds)}};
  json b2 = {{"id", "b2"}, {"curve", curve}, {"n", 2}, {"seed_curves", json(b2_seeds)}};
  return {{"title", "grok"},
          {"profile", "p"},
          {"plots", {"grok"}},
          {"groups", {{{"id", "g"}, {"label", "g"}, {"arms", {a2, b2}}, {"contrasts", json::array()}}}}};
}

// The panels of a multiplot script, in order: each its settings and its plot command (which ends at
// the first line break not escaped).
struct Panels {
  explicit Panels(const std::string& script) {
    for (std::size_t from = 0, at; (at = script.find("\nplot ", from)) != std::string::npos;) {
      std::size_t end = at + 1;
      while ((end = script.find('\n', end + 1)) != std::string::npos && script[end - 1] == '\\') {}
      settings.push_back(script.substr(from, at - from));
      plots.push_back(script.substr(at + 1, end - at - 1));
      from = end;
    }
  }
  std::vector<std::string> settings, plots;
};

// The first value of column 2 of every data file that PLOT reads, sorted.
std::vector<double> first_values(const std::string& plot, const FigureScript& f) {
  std::vector<double> out;
  const std::regex file("'(s[0-9]+\\.dat)'");
  for (auto it = std::sregex_iterator(plot.begin(), plot.end(), file); it != std::sregex_iterator(); ++it)
    for (const auto& [name, content] : f.files)
      if (name == (*it)[1].str()) {
        std::istringstream in(content);
        double x = 0, y = 0;
        in >> x >> y;
        out.push_back(y);
      }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Plots, SeveralSeedsOfAGrokTableGetAPanelEachWithTheirSustainedGrokEpoch) {
  const json table =
      grok_table({seed_curve(1, 0, 200), seed_curve(1, 1, nullptr)}, {seed_curve(2, 2, 100), seed_curve(2, 1, 300)});
  const auto figure = figure_script(table, "grok");
  const std::string& script = figure.script;
  EXPECT_NE(script.find("set multiplot layout 3,2 rowsfirst title 'grok"), std::string::npos) << script;
  const Panels p(script);
  ASSERT_EQ(p.plots.size(), 5u) << script;  // the means, seeds 0, 1 and 2, the legend
  const auto a2_colour = stiefel::arms::find("a2").colour, b2_colour = stiefel::arms::find("b2").colour;
  auto arrow = [](int epoch, const std::string& colour) {
    return "set arrow from " + std::to_string(epoch) + ", graph 0 to " + std::to_string(epoch) +
           ", graph 1 nohead lw 2 dt 2 lc rgb '" + colour + "'";
  };
  EXPECT_NE(p.settings[0].find("'mean over seeds'"), std::string::npos);
  EXPECT_NE(p.settings[1].find("'seed 0, held-out; sustained grok: A2 at 200'"), std::string::npos) << p.settings[1];
  EXPECT_NE(p.settings[1].find(arrow(200, a2_colour)), std::string::npos) << p.settings[1];
  EXPECT_NE(p.settings[2].find("'seed 1, held-out; sustained grok: A2 never, B2 at 300'"), std::string::npos);
  EXPECT_NE(p.settings[2].find(arrow(300, b2_colour)), std::string::npos) << p.settings[2];
  EXPECT_NE(p.settings[3].find("'seed 2, held-out; sustained grok: B2 at 100'"), std::string::npos);
  EXPECT_NE(p.settings[3].find(arrow(100, b2_colour)), std::string::npos) << p.settings[3];
  for (std::size_t k = 0; k < 5; ++k) {  // every arrow of the panel before unset first; a legend only last
    const auto unset = p.settings[k].find("unset arrow\n"), set = p.settings[k].find("set arrow from ");
    ASSERT_NE(unset, std::string::npos) << k;
    EXPECT_TRUE(set == std::string::npos || unset < set) << p.settings[k];
    EXPECT_EQ(p.settings[k].find("set arrow from ", set == std::string::npos ? 0 : set + 1) == std::string::npos, true)
        << "two arrows in panel " << k;
    EXPECT_EQ(p.plots[k].find(" title '") == std::string::npos, k < 4) << p.plots[k];
  }
  // Each seed panel draws the held-out curves of that seed, each in its arm's colour.
  EXPECT_EQ(first_values(p.plots[1], figure), (std::vector<double>{0.1}));
  EXPECT_EQ(first_values(p.plots[2], figure), (std::vector<double>{0.11, 0.21}));
  EXPECT_EQ(first_values(p.plots[3], figure), (std::vector<double>{0.22}));
  EXPECT_EQ(p.plots[1].find("lc rgb '" + b2_colour + "'"), std::string::npos) << "a B2 curve in seed 0's panel";
  EXPECT_NE(p.plots[3].find("lc rgb '" + b2_colour + "'"), std::string::npos);
  for (const std::string entry : {"A2 held-out", "A2 train (first panel)", "A2 sustained grok (seed panels)",
                                  "B2 held-out", "B2 sustained grok (seed panels)"})
    EXPECT_NE(p.plots[4].find("title '" + entry + "'"), std::string::npos) << entry;
  EXPECT_NE(p.settings[4].find("set key center center maxcols 1 noenhanced"), std::string::npos);
  if (!have_gnuplot()) GTEST_SKIP() << "no gnuplot";
  const auto figures = render_plots(table, "grok-p");
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_GT(figures[0].png.size(), 1000u);
}

// What the panels cannot draw: a seed or epoch that is not a whole number is refused by name; a seed
// with no evaluated epoch gets no panel; past twelve seeds, the first twelve get one (the title says
// so); seed curves without a mean curve draw nothing.
TEST(Plots, GrokPanelsRefuseFractionsAndDrawOnlyWhatTheyCan) {
  for (const auto& [what, bad] : std::vector<std::pair<std::string, json>>{
           {"seed 0.5 is not a whole number", grok_table({seed_curve(1, 0, 200)}, {json{{"seed", 0.5}}})},
           {"sustained-grok epoch 2.5 is not a whole number",
            grok_table({seed_curve(1, 0, 2.5)}, {seed_curve(2, 1, nullptr)})}}) {
    try {
      figure_script(bad, "grok");
      ADD_FAILURE() << what << ": drawn";
    } catch (const ExperimentError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  auto empty = seed_curve(2, 1, nullptr);
  empty["epoch"] = json::array();
  empty["test_acc"] = json::array();
  EXPECT_EQ(Panels(figure_script(grok_table({seed_curve(1, 0, 200)}, {empty}), "grok").script).plots.size(), 3u)
      << "the means, seed 0, the legend";
  std::vector<json> many;
  for (int seed = 0; seed < 13; ++seed) many.push_back(seed_curve(1, seed, nullptr));
  const auto script = figure_script(grok_table(many, {}), "grok").script;
  EXPECT_EQ(Panels(script).plots.size(), 14u);
  EXPECT_NE(script.find("mean over seeds (a panel for each of the first 12 of 13 seeds)"), std::string::npos);
  EXPECT_EQ(script.find("'seed 12,"), std::string::npos);
  auto no_curve = grok_table({seed_curve(1, 0, 200)}, {seed_curve(2, 1, nullptr)});
  for (auto& a : no_curve["groups"][0]["arms"]) a.erase("curve");
  EXPECT_TRUE(figure_script(no_curve, "grok").script.empty());
}
