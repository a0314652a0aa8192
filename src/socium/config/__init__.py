"""The experiment config: one validated pydantic tree, loaded from YAML with a safe loader.

Validation happens before a run directory is touched, so a typo never leaves a half-written run.
Errors name the key path, the bad value and what is allowed.
"""

# The config's sections live in the modules named for what they configure; every name this module
# defined before the split (and the sections it mounts from elsewhere) is re-exported here, so
# `from socium.config import X` keeps working.
from socium.config.agents import DEFAULT_LLM_ACTIONS as DEFAULT_LLM_ACTIONS
from socium.config.agents import InterviewConfig as InterviewConfig
from socium.config.agents import LLMAgentConfig as LLMAgentConfig
from socium.config.agents import MemoryConfig as MemoryConfig
from socium.config.agents import PolicyConfig as PolicyConfig
from socium.config.agents import SurveyConfig as SurveyConfig
from socium.config.agents import TimingConfig as TimingConfig
from socium.config.executor import ExecutorConfig as ExecutorConfig
from socium.config.experiment import HASH_EXCLUDED as HASH_EXCLUDED
from socium.config.experiment import MAX_SEED as MAX_SEED
from socium.config.experiment import ExperimentConfig as ExperimentConfig
from socium.config.llm import LLMConfig as LLMConfig
from socium.config.loading import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from socium.config.loading import MAX_CONFIG_NODES as MAX_CONFIG_NODES
from socium.config.loading import config_from_dict as config_from_dict
from socium.config.loading import load_config as load_config
from socium.config.loading import parse_yaml as parse_yaml
from socium.config.loading import read_config_text as read_config_text
from socium.config.loading import read_yaml_mapping as read_yaml_mapping
from socium.config.loading import validate_dict as validate_dict
from socium.config.moderation import ModerationConfig as ModerationConfig
from socium.config.moderation import RolesConfig as RolesConfig
from socium.config.moderation import Veracity as Veracity
from socium.config.world import GraphConfig as GraphConfig
from socium.config.world import JoinAt as JoinAt
from socium.config.world import PlatformConfig as PlatformConfig
from socium.config.world import PopulationConfig as PopulationConfig
from socium.config.world import RecsysConfig as RecsysConfig
from socium.config.world import SeedAction as SeedAction
from socium.config.world import SeedPost as SeedPost
from socium.errors import ConfigError as ConfigError
