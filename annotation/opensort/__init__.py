"""The open card sort: free tags on cards, their consolidation into types, the freeze."""
