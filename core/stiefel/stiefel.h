// The whole core: include this to get every header of stiefel::core.
#pragma once

#include "adamw.h"
#include "attention_score.h"
#include "exponential.h"
#include "frames.h"
#include "grassmann_kmeans.h"
#include "random.h"
#include "retraction.h"
#include "riemannian_adam.h"
#include "riemannian_sgd.h"
#include "scalar.h"
#include "soft_orthogonality.h"
#include "tangent_projection.h"
