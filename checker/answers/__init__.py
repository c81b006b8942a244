"""What the application makes of the outputs: tensor steps, a decoder per kind of answer, the figures rules on
answers measure, answer fidelity and its one-edit explanations (docs/answers.md)."""
