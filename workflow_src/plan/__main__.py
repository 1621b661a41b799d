from workflow_src.plan.cost import main

main()
