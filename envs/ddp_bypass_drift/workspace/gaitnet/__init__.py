"""gaitnet: activity classification from paired wrist/ankle sensor windows."""
