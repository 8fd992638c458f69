// The rule claims of the paper's invariances: scale-freeness (Prop. 3(ii)), O(d)-equivariance
// (Prop. 7), weight decay annihilated (Prop. 8) and the frozen arm (Table 6).
#include "rule_claim_builders.h"

namespace stiefel::certificates::rule_detail {

// --- scale-freeness (Prop. 3(ii)) ----------------------------------------------------------------

enum class ScaleMutant { kNone, kEpsAtGradientScale };

// Two forms, each a pair of runs on G and on cG: eps = 0 in both (the rule is scale-free), and eps
// at the largest gradient's norm with the cG run's eps scaled by c (Prop. 3(ii)'s eps > 0 form: the
// step from cG with eps is the step from G with eps / c, so eps is the one scale the rule sees). The
// control takes the second pair with eps left unscaled: eps at the largest gradient's norm halves
// the largest step at least (a profile can take a gradient eight decades below the base scale, where
// an eps at the base scale stops the rule), and its rate is at least 2^20 u_io (0.06 for float32
// frames; no change in float64): at the drawn rate 10^-3 the frames' float32 rounding is within a
// factor 10 of the control's effect.
CheckResult scale_free(const RuleImplementation& impl, const Case& c, ScaleMutant mutant) {
  const double factor = std::ldexp(1.0, int(c.log10_c));
  const double eps = gradient_norm_range(c).second;
  CheckResult out;
  // Every case runs at its drawn rate and again at eta_R = 1, the paper's, where B2's cap binds.
  for (const bool at_paper_rate : {false, true})
    for (RuleSettings zero :
         settings_list(impl, c, {std::begin(kFrameRules), std::end(kFrameRules)}, 0.0, /*adaptive_only=*/true)) {
      if (at_paper_rate) zero.lr = 1.0;
      // A rule's own decay is a setting, the same in both runs: drawn against the smaller run's
      // gradients (c < 1 shrinks them), so that lambda W's cancellation stays within their rounding.
      if (zero.weight_decay) *zero.weight_decay *= std::min(1.0, factor);
      RuleSettings positive = zero;
      positive.eps = eps;
      // Where c < 1, a float32 rule's control takes eps at the first gradient's norm: at the largest,
      // the early steps of a profile growing over six decades are below float32's resolution in both
      // runs; at the first, the cG run's eps / c at least slows the first step, whatever the profile.
      if (mutant == ScaleMutant::kEpsAtGradientScale && coarse_arithmetic(impl) && factor < 1)
        positive.eps = gradient_norms(c).first;
      // The control runs below the cap: a per-frame denominator only scales the step, which a binding
      // cap then undoes, so eps left unscaled would change no frame there.
      // A float32 rule's control runs at a rate up to 1/4, as far below its cap as the float32 trainer's.
      if (mutant == ScaleMutant::kEpsAtGradientScale) {
        positive.lr = control_size(impl, std::min(zero.lr, 1e-2), 20, 22);
        if (coarse_arithmetic(impl) && positive.cap_tau)
          positive.lr = std::max(control_size(impl, std::min(zero.lr, 1e-2), 20),
                                 std::min(positive.lr, *positive.cap_tau * std::sqrt(double(c.r))));
      }
      for (const bool eps_positive : {false, true}) {
        if (mutant == ScaleMutant::kEpsAtGradientScale && !eps_positive) continue;
        const RuleSettings& s = eps_positive ? positive : zero;
        RuleSettings s_scaled = s;
        if (eps_positive && mutant == ScaleMutant::kNone) s_scaled.eps = eps * factor;
        auto a = impl.make();
        auto b = impl.make();
        const auto plain = run_rule(*a, c, s, kSame);
        const auto scaled = run_rule(*b, c, s_scaled, [&](const Frames<double>&, Frames<double> g) {
          for (auto& f : g) f *= factor;
          return g;
        });
        double diff = 0;
        for (std::size_t t = 0; t < plain.size(); ++t) diff = worse(diff, max_abs_difference(plain[t], scaled[t]));
        // A rule's own decay is not scaled with the gradients: lambda W cancels against the smaller of
        // the two runs' gradients, so its term is lambda / min(1, c).
        const double lambda = own_decay(s) / std::min(1.0, factor);
        keep_worse(out, roundoff(diff, impl.unit_roundoff,
                                 rounding_factor(impl, c, s, lambda, /*same_gradients=*/lambda == 0)));
      }
    }
  Case at_paper_rate = c;
  at_paper_rate.log10_lr = 0;
  out.detail["cap_binding_share_b2"] = cap_binding_share(at_paper_rate);
  return out;
}

Claim scale_free_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-scale-free", "Prop. 3(ii), §5.3", "invariance",
                       "With eps = 0 every adaptive rule is scale-free: gradients scaled by c > 0 give the same "
                       "frames at every step. With eps > 0, gradients scaled by c with eps scaled by c give the "
                       "same frames (the step from cG at eps is the step from G at eps / c).");
  c.own_dtype_only = true;  // the 50-digit slot repeats the implementation's run
  c.generator =
      "every adaptive rule; d in [2,10], r in [1,d], H in [1,3], T in [1,30], the sequence claims' gradients, "
      "rate 10^[-3,-1] and, for every case again, eta_R = 1, the paper's, where B2's cap binds (the share of (step, "
      "head) pairs it rescales there, core/'s B2 on the same sequence, is the detail's cap_binding_share_b2), eps = 0 "
      "in one pair of runs and eps = the "
      "largest ||G_t||_F (c times that in the cG run) in the other, c = 2^k, k in [-40,40] \\ {0}; 40 cases";
  c.residual =
      "max |W_t(cG) - W_t(G)| over steps and entries, worst rule and pair; factor d*r*T*(1 + 8 lr) (+ u_io/u where "
      "frames "
      "cross in a coarser dtype: c = 2^k scales a rounded gradient exactly, so only the frame's rounding is left)";
  c.analysis =
      "m_hat and sqrt(v_hat) are both of degree one in G, so m_hat / (sqrt(v_hat) + eps) is of degree zero in "
      "(G, eps) jointly.";
  c.cap_must_bind = !impl.declaration || impl.declaration->settings.cap_tau.has_value();
  c.generator_fn = [] {
    return rc::gen::exec([] {
      Case k = *sequence_cases(2, 30, -3, -1, true);
      const int e = *rc::gen::inRange(1, 41);
      k.log10_c = *rc::gen::arbitrary<bool>() ? e : -e;  // the exponent k of c = 2^k
      return k;
    });
  };
  const auto bind = [impl](ScaleMutant m) {
    return same_in_both([impl, m](const Case& k) { return scale_free(impl, k, m); });
  };
  c.check = bind(ScaleMutant::kNone);
  c.controls = {
      {"eps-at-gradient-scale",
       "eps at the largest gradient's norm in both runs, not scaled by c in the cG run (the eps = 0 "
       "statement read for eps > 0), rate max(min(lr, 1e-2), 2^20 u_io), below the cap (a binding cap "
       "undoes a per-frame denominator's scale)" +
           for_float32(impl, "rate up to min(1/4, tau sqrt(r)), eps at the first gradient's norm where c < 1"),
       bind(ScaleMutant::kEpsAtGradientScale)}};
  return c;
}

// --- O(d)-equivariance (Prop. 7) -----------------------------------------------------------------

enum class RotationMutant { kNone, kElementwiseMoment, kGradientsOffRotation };

CheckResult equivariant(const RuleImplementation& impl, const Case& c, RotationMutant mutant) {
  Rng qrng(c.seed ^ 0x5bd1e995ULL);
  const Matrix<double> q = random_orthogonal<double>(qrng, c.d);
  CheckResult out;
  const std::vector<FrameRule> rules =
      mutant == RotationMutant::kElementwiseMoment
          ? std::vector<FrameRule>{FrameRule::kB2m}
          : rules_for(impl, {FrameRule::kB2, FrameRule::kB2Mean, FrameRule::kB2Column, FrameRule::kB2Grassmann,
                             FrameRule::kSgdGrassmann, FrameRule::kSgdStiefel});
  // The control's gradients are rotated by Q exp(delta J) in place of Q (J a unit skew matrix).
  Matrix<double> off = Matrix<double>::Identity(c.d, c.d);
  if (mutant == RotationMutant::kGradientsOffRotation) {
    Matrix<double> j = gaussian_matrix<double>(qrng, c.d, c.d);
    j = (j - j.transpose()).eval();
    j /= j.norm();
    const double delta = control_size(impl, 1e-3, 21, 25);
    off = matrix_exponential<double>(Matrix<double>(-delta * j));  // Q^T G becomes exp(delta J)^T Q^T G
  }
  std::vector<RuleSettings> runs;
  if (mutant == RotationMutant::kElementwiseMoment)
    runs.push_back(settings_of(FrameRule::kB2m, case_rate(c, FrameRule::kB2m), 0.0));
  else
    runs = settings_list(impl, c, rules, c.eps_zero ? 0.0 : pow10(c.log10_eps));
  for (RuleSettings s : runs) {
    // eps = 0 for the elementwise control: an eps above the gradients makes the quotient linear in
    // G, and so equivariant, hiding the elementwise moment.
    if (mutant == RotationMutant::kElementwiseMoment) s.eps = 0;
    // eps = 0 for a float32 rule's rotated control: where a profile drops the gradients 1e-8 below
    // the base scale, an eps above them leaves steps below float32's resolution, whatever the rotation.
    // Its rate is at least 1/8 (a single step at rate 1e-2 moves the frames by 1e-2).
    if (mutant == RotationMutant::kGradientsOffRotation && coarse_arithmetic(impl)) {
      s.eps = 0;
      raise_step(s, c, 0.125);
    }
    auto a = impl.make();
    auto b = impl.make();
    const auto plain = run_rule(*a, c, s, kSame);
    const auto rotated = run_rule(
        *b, c, s,
        [&](const Frames<double>&, Frames<double> g) {
          if (mutant == RotationMutant::kGradientsOffRotation)
            for (auto& f : g) f = (off * f).eval();
          return g;
        },
        &q);
    double diff = 0;
    for (std::size_t t = 0; t < plain.size(); ++t) {
      Frames<double> back;
      for (const auto& f : plain[t]) back.push_back(q.transpose() * f);
      diff = worse(diff, max_abs_difference(back, rotated[t]));
    }
    keep_worse(out, roundoff(diff, impl.unit_roundoff, rounding_factor(impl, c, s, own_decay(s))));
  }
  out.detail["cap_binding_share_b2"] = cap_binding_share(c);
  return out;
}

Claim equivariance_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-equivariance", "Prop. 7, §5.3", "equivariance",
                       "Every rule whose second moment is constant down each column (scalar, mean, per column; "
                       "the fixed-step rules) is O(d)-equivariant: from Q^T W with gradients Q^T G it returns "
                       "Q^T times its frames.");
  c.own_dtype_only = true;  // the 50-digit slot repeats the implementation's run
  c.generator =
      "B2, B2-mean, B2 per-column, B2 Grassmann, PA16, fixed-step Stiefel; d in [3,10] (O(1) and O(2)'s "
      "degenerate cases left to prop7-converse), r in [1,d], H in [1,3], T in [1,30], rate 10^[-2,0], about half the "
      "cases of core/ and the trainer (the first among them) at eta_R = 1, the paper's (the cap binds there: the share "
      "of (step, head) pairs it "
      "rescales, core/'s B2 on the case's sequence, is the detail's "
      "cap_binding_share_b2), eps 1e-8, one Haar Q per case; 40 cases";
  c.residual =
      "max |W_t(Q^T W_0, Q^T G) - Q^T W_t(W_0, G)| over steps and entries, worst rule; factor d*r*T*(1 + "
      "||eta||max) as for rule-agrees-with-core";
  c.analysis = "Each stage commutes with W -> Q^T W: projections, Frobenius norms, the polar factor.";
  c.generator_fn = [impl] { return half_at_paper_rate(impl, sequence_cases(3, 30, -2, 0, false)); };
  c.cap_must_bind = built_in(impl);  // a user's rule's cap is its own: the share is recorded, not asserted
  const auto bind = [impl](RotationMutant m) {
    return same_in_both([impl, m](const Case& k) { return equivariant(impl, k, m); });
  };
  c.check = bind(RotationMutant::kNone);
  if (impl.only_rule.empty())
    c.controls = {{"elementwise-moment", "the elementwise second moment (B2m, eps 0) through the same implementation",
                   bind(RotationMutant::kElementwiseMoment)}};
  else  // one rule only: the near miss is in the rotation, not in a second rule
    c.controls = {{"gradients-off-rotation",
                   "the gradients rotated by Q exp(delta J) while the frames are rotated by Q (J a unit skew matrix, "
                   "delta = max(1e-3, 2^21 u_io))" +
                       for_float32(impl, "delta = 2^25 u_io, eps 0, steps of at least 1/8"),
                   bind(RotationMutant::kGradientsOffRotation)}};
  return c;
}

// --- weight decay annihilated (Prop. 8) ---------------------------------------------------------

enum class DecayMutant { kNone, kTangentDirection };

// Every rule that moves. lambda W cancels in the projection only to u lambda sqrt(r); a rule's
// quotient passes that on amplified by ||xi|| over its denominator, which is ||xi|| itself for a
// second moment constant down each column, but for the elementwise rules (B2m, B2m-can)
// sqrt(v_hat_ij) + eps of the smallest entry, up to ||xi|| / eps (measured: ratio 153 for core/ and
// the trainer alike against a tolerance without it, at d = 8, r = 3, the alternating profile,
// lambda = 3e-3 ||G||). quotient_amplification measures it on the case.
const std::vector<FrameRule> kDecayRules = {FrameRule::kB2,           FrameRule::kB2Mean,    FrameRule::kB2Column,
                                            FrameRule::kB2Grassmann,  FrameRule::kB2m,       FrameRule::kB2mCan,
                                            FrameRule::kSgdGrassmann, FrameRule::kSgdStiefel};

// How much more than a per-frame denominator an elementwise rule's quotient amplifies a change of its
// tangent gradient: max over steps, heads and entries of ||xi_t|| / (sqrt(v_hat_ij) + eps), on core/'s
// run of the same rule over the case's gradients (1 for every other rule). The rounding of lambda W's
// cancellation is carried by the tolerance times this factor.
double quotient_amplification(const Case& c, const RuleSettings& s) {
  if (!s.adaptive || s.moment != SecondMoment::kElementwise) return 1;
  const RiemannianAdamHyper<double> hyper = rules::adam_hyper_of(s);
  double amplification = 1;
  run_adam<double>(c, hyper, 1.0, [&](int t, const Frames<double>&, const RiemannianAdamDirection<double>& dir) {
    const double bias2 = 1 - std::pow(hyper.beta2, double(t + 1));
    for (std::size_t h = 0; h < dir.state.v.size(); ++h) {
      const double floor = ((dir.state.v[h].array() / bias2).sqrt() + hyper.eps).minCoeff();
      amplification = std::max(amplification, dir.report.tangent_norm[h] / std::max(floor, 1e-300));
    }
  });
  return amplification;
}

CheckResult decay_annihilated(const RuleImplementation& impl, const Case& c, DecayMutant mutant) {
  // The tolerance is the case's (its lambda); the control's tangent term may be larger.
  // A rule computing in float32 cancels lambda W to u32 lambda sqrt(r) / ||G||, relative to the step,
  // which no control could pass at lambda far above the smallest gradient (a decaying profile's is
  // 1e-6 of the base scale): its lambda is 10^[-4, -1] times the smallest gradient norm.
  // So does one whose gradients cross in float32 (the float32 trainer): G + lambda W rounded to float32
  // keeps G only to u_io lambda sqrt(r) / ||G||.
  const double case_lambda = coarse_arithmetic(impl) || impl.io_roundoff > impl.unit_roundoff
                                 ? gradient_norm_range(c).first * pow10(std::min(c.log10_c, 0.0) - 1)
                                 : pow10(c.log10_scale + c.log10_c);
  const double lambda = mutant == DecayMutant::kTangentDirection
                            ? std::max(case_lambda, control_size(impl, 0, 20, 26) * pow10(c.log10_scale))
                            : case_lambda;
  CheckResult out;
  for (const RuleSettings& base :
       settings_list(impl, c, kDecayRules, c.eps_zero ? 0.0 : pow10(c.log10_eps), false, /*moving_only=*/true)) {
    // A rule that applies weight decay itself is compared at lambda and at 0 (its decay, coupled or
    // decoupled, as it applies it); one that takes none gets lambda W added to its gradient.
    const bool own = base.weight_decay.has_value();
    RuleSettings s = base, decayed_settings = base;
    if (own) {
      s.weight_decay = 0.0;
      decayed_settings.weight_decay = mutant == DecayMutant::kNone ? lambda : 0.0;
    }
    auto a = impl.make();
    auto b = impl.make();
    const auto plain = run_rule(*a, c, s, kSame);
    Rng orng(c.seed ^ 0x2545f4914f6cdd1dULL);
    const Matrix<double> b_dir = gaussian_matrix<double>(orng, c.d, c.r);
    const auto decayed = run_rule(*b, c, decayed_settings, [&](const Frames<double>& w, Frames<double> g) {
      if (mutant == DecayMutant::kTangentDirection)
        for (std::size_t h = 0; h < g.size(); ++h) g[h] += lambda * project_tangent<double>(w[h], b_dir);
      else if (!own)
        for (std::size_t h = 0; h < g.size(); ++h) g[h] += lambda * w[h];
      return g;
    });
    double diff = 0;
    for (std::size_t t = 0; t < plain.size(); ++t) diff = worse(diff, max_abs_difference(plain[t], decayed[t]));
    const double amplification = quotient_amplification(c, s);
    CheckResult r = roundoff(diff, impl.unit_roundoff, rounding_factor(impl, c, s, case_lambda * amplification));
    r.detail["quotient_amplification"] = amplification;
    keep_worse(out, r);
  }
  out.detail["cap_binding_share_b2"] = cap_binding_share(c);
  return out;
}

Claim decay_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-decay-annihilated", "Prop. 8, §4.3, §5.3", "invariance",
                       "Coupled weight decay, lambda W added to the gradient, changes no frame rule's step: the "
                       "frames are the same at every step.");
  c.own_dtype_only = true;  // the 50-digit slot repeats the implementation's run
  c.generator =
      "every rule that moves, the elementwise B2m and B2m-can included (their quotient amplifies the rounding of the "
      "cancelled lambda W by ||xi|| / (sqrt(v_hat_ij) + eps), measured on the case: quotient_amplification in the "
      "detail); d in [3,10], r in [2,d] (at d = r = 2 the tangent space is a line, "
      "along which a "
      "normalised step cannot see the control's direction), H in [1,3], "
      "T in [1,30], rate 10^[-2,0], about half the cases of core/ and the trainer (the first among them) at eta_R = "
      "1, the paper's (the cap binds there: the share of (step, head) pairs it rescales, core/'s B2 on the case's "
      "sequence, is the detail's "
      "cap_binding_share_b2), eps 1e-8, lambda = 10^[-3,2] times the "
      "gradients' base scale (an implementation "
      "whose gradients cross in float32: 10^[-4,-1] times the smallest gradient norm); 40 cases";
  c.residual =
      "max |W_t(G + lambda W) - W_t(G)| over steps and entries, worst rule; factor d*r*T*(1 + ||eta||max)*(1 + "
      "A lambda sqrt(r) / min||G_t||) (the projection cancels lambda W to u lambda sqrt(r); A the quotient's "
      "amplification, 1 but for the elementwise rules)";
  c.analysis =
      "lambda W is normal to St(d,r) at W (Pi_W(W) = W - W sym(W^T W) = 0, and likewise for the "
      "horizontal and canonical maps), so every map removes it.";
  c.generator_fn = [impl] {
    return half_at_paper_rate(impl, rc::gen::exec([] {
                                Case k = *sequence_cases(3, 30, -2, 0, false);
                                if (k.r < 2) k.r = 2;
                                k.log10_c = gen::real(-3, 2, 20);
                                return k;
                              }));
  };
  c.cap_must_bind = built_in(impl);  // a user's rule's cap is its own: the share is recorded, not asserted
  const auto bind = [impl](DecayMutant m) {
    return same_in_both([impl, m](const Case& k) { return decay_annihilated(impl, k, m); });
  };
  c.check = bind(DecayMutant::kNone);
  c.controls = {
      {"tangent-direction",
       "lambda Pi_W(B) (B Gaussian: a generic tangent direction) in place of lambda W, lambda at least 2^20 u_io "
       "times the gradients' scale (0.06 for float32 gradients; no change in float64)" +
           for_float32(impl,
                       "lambda at least 2^26 u_io times the gradients' scale; the case's lambda 10^[-4, -1] "
                       "times the smallest gradient norm"),
       bind(DecayMutant::kTangentDirection)}};
  return c;
}

// --- the frozen arm (Table 6) ---------------------------------------------------------------------

enum class FrozenRuleMutant { kNone, kSmallRate };

CheckResult frozen(const RuleImplementation& impl, const Case& c, FrozenRuleMutant mutant) {
  double worst = 0;
  for (RuleSettings s : settings_list(impl, c, {FrameRule::kB2, FrameRule::kFrozen}, 1e-8)) {
    s.lr = 0;
    if (mutant == FrozenRuleMutant::kSmallRate) {
      s.lr = control_size(impl, 1e-6, 16, 18);
      s.eps = 0;  // B2's step is then the rate itself, whatever the gradients' size
    }
    auto a = impl.make();
    Rng rng(c.seed);
    const Frames<double> w0 = random_frames<double>(rng, {c.d, c.r}, c.heads);
    const auto run = run_rule(*a, c, s, kSame);
    for (const auto& w : run) worst = worse(worst, max_abs_difference(w, w0));
  }
  return roundoff(worst, impl.unit_roundoff, rounding_factor(impl, c, settings_of(FrameRule::kFrozen, 0.0, 1e-8)));
}

Claim frozen_claim(const RuleImplementation& impl) {
  Claim c = base_claim(impl, "rule-frozen-stays", "Table 6 (frozen arm), §2", "identity",
                       "At rate 0 (the frozen arm, and B2 with eta_R = 0) the frames stay where they start: the "
                       "polar retraction of an orthonormal frame returns it.");
  c.own_dtype_only = true;  // the 50-digit slot repeats the implementation's run
  c.generator = "d in [2,10], r in [1,d], H in [1,3], T in [1,30] steps of the sequence claims' gradients; 40 cases";
  c.residual = "max |W_t - W_0| over steps and entries; factor d*r*T (with a coarser u_io: + (1 + 4T) u_io/u)";
  c.analysis = "polar(W) = W for W on St(d,r); the step is 0.";
  c.generator_fn = [] { return sequence_cases(2, 30, -2, 0, false); };
  const auto bind = [impl](FrozenRuleMutant m) {
    return same_in_both([impl, m](const Case& k) { return frozen(impl, k, m); });
  };
  c.check = bind(FrozenRuleMutant::kNone);
  c.controls = {{"small-rate",
                 "rate max(1e-6, 2^16 u_io) and eps 0 in place of rate 0 (1e-6 in float64, 0.004 for float32 "
                 "frames)" +
                     for_float32(impl, "rate 2^18 u_io"),
                 bind(FrozenRuleMutant::kSmallRate)}};
  return c;
}

}  // namespace stiefel::certificates::rule_detail
