"""ftpipe: continued pretraining of the team's small GPT-NeoX base models with FSDP."""
