"""SparkSession bootstrap and fleet jobs; distributes what formats and recovery do per directory."""
