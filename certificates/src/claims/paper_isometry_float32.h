// Table 4's float32 isometry bound at the paper's sizes and rates (update-isometry-paper-bound-float32).
// Included by implemented_update.h, after the helpers it defines (the schedules, the hand-computed
// steps).
#pragma once

#include <array>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <stiefel/rules/frame_rules.h>

#include "gradient_sequences.h"

namespace stiefel::certificates {

// The paper's float32 isometry bound with the polar factor by its Gram route (eigh of (W+eta)^T (W+eta)),
// the other route core offers, or by the second-order expansion.
enum class PaperIsometryMutant { kNone, kGramRoute, kSecondOrderPolar };

// Table 4's caption: "Stiefel arms stay <= 2.1e-5 [isometry error max|W^T W - I|] at every evaluated
// epoch", a float32 figure. B2 in float32 at the paper's two shapes: the image task (d = 128, r = 16,
// H = 8, eta_R = 1 with warm-up and cosine, eps = 1e-8, 1 600 steps: 40 epochs of n = 10k in batches of
// 256) and the grokking task (d = 128, r = 32, H = 4, eta_R = 1 constant, eps = 1e-3; all of its
// 20 000 full-batch steps), polar factor by thin SVD (§3.2). The gradients follow the frames
// (frame_dependent_gradients: a direction redrawn every 25 steps, noise, and a loss's pull on the
// frame), so that the cap binds in a share of the steps as in training (steps_capped in the detail;
// a run in which it never binds fails the claim). The result is the running maximum over every step
// and head. The run is float32 by definition: it is computed once per mutant and both precision slots
// report it.
struct PaperIsometryShape {
  const char* task;
  int r, heads, steps, schedule;
  float eps;
};
inline constexpr PaperIsometryShape kPaperIsometryShapes[] = {{"image", 16, 8, 1600, 1, 1e-8f},
                                                              {"grokking", 32, 4, 20000, 0, 1e-3f}};
inline constexpr double kPaperIsometryBound = 2.1e-5;

// The rule, or one of its two controls, on the shapes' gradient draws (the same random draws for
// each; the gradients then follow each one's own frames). The rule runs every step; a control stops
// once its running maximum is past the control's margin (kPaperIsometryControlMargin times the
// bound): a running maximum never falls, so the rest of the run cannot save it. Each is run on its
// own, so that a control swapped into the pipeline costs its own steps only.
// The margin, derived in this regime: the rule's running maximum is 0.522-0.545 of the bound over five
// seeds of these runs (20261202 and 1-4), so a control 3 times past the bound is 5.5 times past what
// the rule itself reaches; the Gram route reaches 4.40-4.80 times the bound on the same seeds, the
// second-order polar factor 448-453 times.
inline constexpr double kPaperIsometryControlMargin = 3;

inline CheckResult paper_isometry_float32_run(PaperIsometryMutant mutant) {
  CheckResult r;
  r.normaliser = kPaperIsometryBound;
  r.ratio = 0;
  long capped_total = 0, pairs_total = 0;  // over both runs' (step, head) pairs: the share the certificate states
  for (const auto& shape : kPaperIsometryShapes) {
    Case c;
    c.d = 128;
    c.r = shape.r;
    c.heads = shape.heads;
    c.steps = shape.steps;
    c.corr = 0.5;
    c.seed = 20261202;
    Rng rng(c.seed);
    const Frames<float> w0 = random_frames<float>(rng, {c.d, c.r}, c.heads);
    const Frames<float> pull = pull_subspaces<float>(rng, c);
    Frames<float> direction;
    RiemannianAdamHyper<float> hyper = b2_hyper<float>(1.0f, shape.eps);
    hyper.retraction = mutant == PaperIsometryMutant::kGramRoute ? Retraction::kPolarGram : Retraction::kPolarSvd;
    Frames<float> w = w0;
    RiemannianAdamState<float> state = make_riemannian_adam_state<float>(w0, hyper.moment);
    float worst = 0;
    int worst_step = 0, steps_run = 0, capped_steps = 0;
    long capped_pairs = 0, pairs = 0;  // (step, head) pairs, and those the cap rescales
    const auto running = [&] {
      return mutant == PaperIsometryMutant::kNone || worst < kPaperIsometryControlMargin * kPaperIsometryBound;
    };
    for (int t = 0; t < c.steps && running(); ++t) {
      const Frames<float> g = frame_dependent_gradients<float>(rng, direction, pull, w, c, t);
      hyper.lr = float(schedule_factor(shape.schedule, t, c.steps));
      auto dir = riemannian_adam_direction<float>(w, g, state, hyper);
      capped_steps += std::any_of(dir.report.capped.begin(), dir.report.capped.end(), [](bool b) { return b; });
      for (const bool capped : dir.report.capped) {
        capped_pairs += capped;
        ++pairs;
      }
      if (mutant == PaperIsometryMutant::kSecondOrderPolar) {
        for (std::size_t h = 0; h < w.size(); ++h) w[h] = second_order_polar<float>(w[h], dir.eta[h]);
        state = std::move(dir.state);
      } else {
        auto next = finish_riemannian_adam_step<float>(w, std::move(dir), hyper);
        w = std::move(next.frames);
        state = std::move(next.state);
      }
      steps_run = t + 1;
      for (const auto& frame : w) {
        const float e = isometry_error(frame);
        if (!(e <= worst)) {
          worst = e;
          worst_step = t + 1;
        }
      }
    }
    capped_total += capped_pairs;
    pairs_total += pairs;
    double ratio = double(worst) / kPaperIsometryBound;
    r.detail[shape.task] = {{"isometry_running_max", worst},
                            {"at_step", worst_step},
                            {"steps", c.steps},
                            {"steps_run", steps_run},
                            {"steps_capped", capped_steps},
                            {"cap_binding_share", double(capped_pairs) / double(std::max(pairs, 1L))}};
    // The claim is about the regime where the cap binds: a run of the rule where it never does
    // decides nothing, and fails the claim (a control is judged by its isometry alone).
    if (mutant == PaperIsometryMutant::kNone && capped_steps == 0) {
      ratio = std::numeric_limits<double>::infinity();
      r.detail[shape.task]["error"] = "the cap binds in no step of this run";
    }
    if (!(ratio <= r.ratio)) {
      r.ratio = ratio;
      r.residual = worst;
    }
  }
  r.detail["cap_binding_share"] = double(capped_total) / double(std::max(pairs_total, 1L));
  return r;
}

inline CheckResult paper_isometry_float32(PaperIsometryMutant mutant) {
  static std::array<std::once_flag, 3> once;
  static std::array<CheckResult, 3> results;
  const auto k = std::size_t(mutant);
  std::call_once(once[k], [&] { results[k] = paper_isometry_float32_run(mutant); });
  return results[k];
}

template <class S>
CheckResult check_paper_isometry_float32(const Case&, PaperIsometryMutant mutant) {
  return paper_isometry_float32(mutant);
}

}  // namespace stiefel::certificates
