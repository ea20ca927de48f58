"""representation"""
